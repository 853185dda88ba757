package runtime

import (
	"database/sql"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Config configures a Runtime. Every zero field takes the default its
// comment states.
type Config struct {
	// DSN names the database: "sqlite:PATH" (the embedded default; a file,
	// created if missing) or "mysql:USER:PASS@tcp(HOST:PORT)/DB" (a
	// go-sql-driver/mysql DSN after the "mysql:" prefix). Ignored when DB is set.
	DSN string
	// DB is an already open handle (then Dialect is required). Use it to
	// submit inside your own transactions on the same database. Open a
	// SQLite one with OpenDB: its connections keep their prepared
	// statements; a handle of database/sql's "sqlite" driver works, but
	// parses every statement on each call.
	DB *sql.DB
	// Dialect is "mysql" or "sqlite"; only with DB.
	Dialect string
	// AutoMigrate applies the embedded migrations at Start. Default false:
	// on MySQL the DBAs apply sql/mysql; Start then checks the schema and
	// names the file to apply if it is missing.
	AutoMigrate bool

	// InstanceID names this runtime in lease_owner and argo_instance.
	// Default: hostname-pid-random.
	InstanceID string
	// Workers is the number of attempts run at once. Default 16.
	Workers int
	// PollInterval is how often due tasks are claimed from the database
	// (retries due within it also get a local timer). Default 1s.
	PollInterval time.Duration
	// ClaimBatch is the most rows one claim takes. Default 100.
	ClaimBatch int
	// LeaseDuration is how long a claim holds a task; the lease is renewed
	// every LeaseDuration/3 for as long as the attempt's function runs in
	// this process (during Stop too), a failed renewal being tried again
	// every LeaseDuration/20. A renewal that finds the lease gone (rescued,
	// or taken by another instance) cancels the attempt's context at once
	// with cause ErrLeaseLost (ErrCancelled when an operator cancelled the
	// task: Inspector.Cancel; the next heartbeat renews at once after a
	// cancel, so a cancel stops a running attempt within HeartbeatInterval
	// plus a round trip); so does a lease whose renewal this instance
	// could not confirm (the database unreachable from here), LeaseDuration/10
	// before it ends by this instance's own clock. Either way its outcome is
	// not recorded. A task whose lease expired (its instance died or was cut
	// off) is rescued LeaseDuration/10 after the lease's end and counted as a
	// failed attempt (lease_expired). Default 30s.
	LeaseDuration time.Duration
	// RetryHold: a failed attempt whose retry falls due within RetryHold
	// stays leased by this instance, which restarts it from a local timer at
	// the due time, without a claim query (no other instance takes it before
	// due+LeaseDuration; Stop gives it back). Scheduled calls of this
	// instance's shards are held the same way min(RetryHold, 2×PollInterval)
	// before their due time. Default LeaseDuration; negative disables
	// holding (every retry and scheduled call is claimed from the database
	// when due).
	RetryHold time.Duration
	// RescueInterval is how often expired leases are looked for, by the one
	// instance holding the "maintenance" role. The role is renewed at that
	// interval and expires after max(InstanceTimeout, 3×RescueInterval)
	// without renewal; Stop hands it over at once. Default LeaseDuration/3.
	RescueInterval time.Duration
	// UnknownTaskDelay is how long a task with no registered handler, or with
	// arguments that do not decode, waits before it is looked at again; it
	// keeps its attempts and shows the reason in error_msg. Default 30s.
	UnknownTaskDelay time.Duration
	// Shards is the size of the shard space (shard_key in [0, Shards)). It
	// must be the same for every instance of one table. Default 64.
	Shards int

	// HeartbeatInterval is how often this instance records itself in
	// argo_instance and recomputes which shards it owns; a heartbeat that
	// finds a task this instance runs cancelled (Inspector.Cancel) renews
	// the leases at once, so a cancel stops a running attempt within
	// HeartbeatInterval plus a round trip. Default 2s.
	HeartbeatInterval time.Duration
	// InstanceTimeout drops an instance that has not heartbeated for this
	// long from the shard split (its shards move to the others).
	// Default 3×HeartbeatInterval.
	InstanceTimeout time.Duration

	// StealAfter lets an instance with idle workers claim tasks of other
	// instances' shards once they are overdue by this long (their owner
	// crashed and has not timed out yet, or is saturated). Only when
	// another live instance owns some of the shards: an instance alone
	// claims from every shard and sends no steal. Default InstanceTimeout;
	// negative disables it (strict sharding).
	StealAfter time.Duration

	// RetentionAge is how long succeeded, recovered and discarded rows (and
	// their attempts) are kept. Dead rows are kept until requeued or
	// discarded. Default 7 days; negative disables the purge.
	RetentionAge time.Duration
	// PurgeBatch bounds the rows one purge statement deletes. Default 1000.
	PurgeBatch int
	// MaintenanceInterval is how often the purge runs. Default 1m.
	MaintenanceInterval time.Duration

	// AlertWorkers run alert actions. Default 2.
	AlertWorkers int
	// AlertQueue bounds alerts waiting for a worker; more are dropped with an
	// error log. Default 1000.
	AlertQueue int
	// AlertTimeout bounds one alert action. Default 10s.
	AlertTimeout time.Duration
	// AlertChannels are the channels a directive's alert-channel=NAME
	// (TaskDef.AlertChannels) sends alerts to, by name (package alertchannel
	// has the built-in ones). Register refuses a task naming one that is not
	// here. Each send runs on the alert pool, bounded by AlertTimeout.
	// Default none.
	AlertChannels map[string]AlertChannel

	// ShutdownTimeout bounds how long Stop waits for running attempts (sync
	// ones included) before canceling them; a canceled attempt's task is given
	// back without counting the attempt, and its lease is renewed until its
	// function returns. Stop's own context ends the wait sooner. Default 30s.
	ShutdownTimeout time.Duration

	// FaultInjection makes this instance honour transient-fail requests
	// (Inspector.TransientFail, argoctl transient-fail): an attempt of a
	// task with one pending fails as transient without calling its
	// function, at the cost of one read before each attempt. For tests and
	// drills. Default false: requests are recorded but not acted on.
	FaultInjection bool

	// IsPermanent classifies errors no retry can fix, in addition to
	// Permanent(err). Default: none. IsPermanentError is a ready one for
	// common errors (HTTP 4xx except 408/429, TLS failures, sql.ErrNoRows).
	IsPermanent func(error) bool
	// ErrorCode classifies a failed attempt's error into a code (seed 001's
	// error_code) when the error carries none of its own (Coded): called
	// with the error the function returned; "" records no code. A code
	// CheckErrorCode refuses is not recorded, and the attempt's stored error
	// text says why (docs/errors.md). Default: none (only Coded codes).
	ErrorCode func(error) string
	// Observer receives events for metrics (see package metrics). Default none.
	Observer Observer
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
	// Now is this host's clock (tests set it). Default time.Now. Lease and
	// due decisions use the database's clock: Now corrected by the offset
	// read at Start and at every heartbeat (docs/clocks.md).
	Now func() time.Time
	// TracerProvider makes the spans of attempts, fallbacks and alerts
	// (docs/tenants-and-traces.md). Default: the global provider of
	// go.opentelemetry.io/otel, a no-op until the program installs one.
	TracerProvider trace.TracerProvider
	// Cipher encrypts the arguments of tasks at rest (AES-256-GCM, a
	// keyring with key ids stored in each row: docs/encryption.md).
	// Default nil: arguments are stored in clear, and a task whose
	// arguments are encrypted waits, undecodable, on this instance.
	Cipher *Cipher
	ring   *keyring // Cipher, validated by withDefaults

	// RetryStrategies maps a task name to the Go code that decides its
	// retries in place of its policy (retry_strategy.go). Default none:
	// every task follows its policy.
	RetryStrategies map[string]RetryStrategy

	// TaskNames, if set, limits the task names this instance claims and
	// registers (argo_instance.task_names) to these; it still submits any.
	// Default nil: every name it has a handler for (docs/instance-scope.md).
	TaskNames []string
	// Tenants, if set, limits the tasks this instance claims to those of
	// these tenants ("" is a task without a tenant). Default nil: every
	// tenant (docs/instance-scope.md).
	Tenants []string
	// TaskPriority lists task names to claim first, highest first: when
	// several are due, those of the first name are claimed before the
	// second's, and so on, then the names not listed. Default nil: oldest
	// due first whatever the name (docs/instance-scope.md).
	TaskPriority []string
	// TenantFairShare shares this instance's free workers among the
	// tenants with tasks due, by weight (TenantWeights), instead of
	// claiming oldest due first: a tenant with a large backlog no longer
	// starves one with a few tasks. Each instance shares its own workers.
	// Default false: oldest due first, whatever the tenant
	// (docs/tenants-fair-share.md).
	TenantFairShare bool
	// TenantWeights weighs tenants under TenantFairShare: a tenant of
	// weight 3 gets three times the starts of one of weight 1 while both
	// have tasks due. Whole numbers from 1 to 1000; a tenant not listed
	// weighs 1. Default nil: every tenant weighs 1. Refused without
	// TenantFairShare.
	TenantWeights map[string]int
}

func (c Config) withDefaults() (Config, error) {
	if c.DB == nil && c.DSN == "" {
		return c, errors.New(`argo: Config needs a DSN ("sqlite:argo.db" for the embedded default, or "mysql:user:pass@tcp(host:3306)/db") or an open DB with its Dialect`)
	}
	if c.DB != nil && !storage.Known(c.Dialect) {
		return c, fmt.Errorf(`argo: Config.Dialect %q: with Config.DB set, Dialect must be one of %s`, c.Dialect, strings.Join(storage.Dialects(), ", "))
	}
	if err := c.checkAlertChannels(); err != nil {
		return c, err
	}
	c.AlertChannels = maps.Clone(c.AlertChannels) // the caller's map may change after Start
	ring, err := newKeyring(c.Cipher)             // cipher.go
	if err != nil {
		return c, err
	}
	c.ring = ring
	if c.InstanceID == "" {
		host, _ := os.Hostname()
		c.InstanceID = host + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 36)
	}
	if len(c.InstanceID) > 128 {
		return c, fmt.Errorf("argo: InstanceID %q longer than 128 bytes", c.InstanceID)
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	defd := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.Workers, 16)
	def(&c.ClaimBatch, 100)
	def(&c.Shards, 64)
	def(&c.PurgeBatch, 1000)
	def(&c.AlertWorkers, 2)
	def(&c.AlertQueue, 1000)
	defd(&c.PollInterval, time.Second)
	defd(&c.LeaseDuration, 30*time.Second)
	defd(&c.RescueInterval, c.LeaseDuration/3)
	if c.RetryHold == 0 {
		c.RetryHold = c.LeaseDuration
	}
	defd(&c.HeartbeatInterval, 2*time.Second)
	defd(&c.InstanceTimeout, 3*c.HeartbeatInterval)
	if c.StealAfter == 0 {
		c.StealAfter = c.InstanceTimeout
	}
	defd(&c.UnknownTaskDelay, 30*time.Second)
	defd(&c.MaintenanceInterval, time.Minute)
	defd(&c.AlertTimeout, 10*time.Second)
	defd(&c.ShutdownTimeout, 30*time.Second)
	if c.RetentionAge == 0 {
		c.RetentionAge = 7 * 24 * time.Hour
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if err := validateStrategies(c.RetryStrategies); err != nil {
		return c, err
	}
	if err := c.validateScope(); err != nil {
		return c, err
	}
	if err := c.validateFair(); err != nil { // fair_share.go
		return c, err
	}
	c.TenantWeights = maps.Clone(c.TenantWeights) // the caller's map may change after Start
	return c, nil
}
