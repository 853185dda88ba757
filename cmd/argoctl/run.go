package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// now is the clock (tests fix it).
var now = time.Now

const usageText = `usage: argoctl [-dsn DSN] [-o table|json] [-timeout 30s] COMMAND [flags] [args]

commands:
  stats    [-window 1h]                      counts per state and task, oldest due task, retry and dead rates
  backlog  [-top 20]                         tasks due now, the oldest due, held retries per task name, tenant
                                             and flow group: the figures of the argo_backlog_* gauges (docs/backlog.md)
  list     [filters] [-limit 50] [-offset 0] [-wide]
                                             tasks, newest first; fits 120 columns (short names, times
                                             in UTC without the year, errors cut with …); -wide: in full
  show     ID                                one task: row, arguments, attempt history, operator trail
  show     ID -attempt N                     one attempt of a task: outcome, times, backoff, worker, error
  requeue  ID... | filters [-reason TEXT] [--all] [--dry-run]
                                             dead or discarded tasks run again as new tasks (fresh ids and
                                             idempotency keys, linked to the old ones, which stay as they
                                             were); recorded in the trail (when, who, the reason if given);
                                             finished tasks cannot be requeued: submit the call again
  discard  ID... | filters -reason TEXT [--all] [--dry-run]
                                             end pending, retrying, exhausted or dead tasks
  cancel   ID... | filters [-group GROUP] -reason TEXT [-limit 10000] [--all] [--dry-run]
                                             end pending, running, retrying, exhausted or blocked tasks
                                             (discarded, never run again); a running attempt is stopped
                                             at its instance's next heartbeat (docs/cancel.md)
  discard-request ID... -reason TEXT        ask for a discard; another operator approves or rejects it
  discard-approve ID... [-reason TEXT]      approve (and carry out) another operator's discard request
  discard-reject  ID... [-reason TEXT]      reject another operator's discard request
  force-fail ID... -reason TEXT             send waiting tasks to the dead letter now
  transient-fail ID... -reason TEXT         fail each task's next attempt as transient, unrun (Config.FaultInjection)
  run      ID... [-reason TEXT]             make pending or retrying tasks due now
  flow     [open|close|trail GROUP]          flow groups (limit=, rate=, breaker=) and their breakers;
                                             open/close a group's breaker by hand (-reason), and
                                             who did so when (docs/flow-control.md)
  serve    [-listen 127.0.0.1:8080] [-write] [-auth-basic USER:PW,…] [-auth-bearer TOKEN]
           [-single-operator-discard] [-trace-url URL]
                                             the operator console in a browser (docs/console.md); read-only
                                             unless -write; a non-loopback -listen needs -auth-basic or -auth-bearer
  rekey    [-to KEYID] [-batch 500] [--dry-run]
                                             re-encrypt arguments encrypted under other keys with the key -to
                                             (default $ARGO_CIPHER_ENCRYPT_WITH); keys from $ARGO_CIPHER_KEYS
                                             (ID:BASE64,…); --dry-run counts rows by key (docs/encryption.md)
  migrate                                    apply the embedded migrations
  version                                    print the version

filters: -state dead,retrying  -name TASK  -shard N  -since 1h|RFC3339  -until 1h|RFC3339  -error TEXT
  -name TASK: the full task name, or its end after a / or a . (Systems.PrintLabel, PrintLabel,
  integration.Systems.PrintLabel); an end that several task names share matches all of them; a full
  name that exists matches only itself; -name =TASK matches TASK exactly and nothing else.

Every change is recorded with who (-operator NAME, default the OS user), when and why.
A discard needs two people: discard is refused, use discard-request and have another operator approve it
(on MySQL from another database account: each operator's own). -single-operator-discard (or
ARGO_SINGLE_OPERATOR_DISCARD=1) lets one operator discard alone; the trail records it as such.

The database is -dsn or $ARGO_DSN: "sqlite:PATH" or "mysql:user:password@tcp(host:3306)/db".
Global flags may also follow the command.
`

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// globals are the flags every command takes.
type globals struct {
	dsn     string
	output  string
	timeout time.Duration
	// operator is who changes are recorded as made by: -operator, else
	// the OS user (operatorName).
	operator string
	// singleOperatorDiscard lets discard end tasks alone
	// (-single-operator-discard, $ARGO_SINGLE_OPERATOR_DISCARD); without
	// it a discard is requested, then approved by another operator.
	singleOperatorDiscard bool
	// discardApproval (-discard-approval, the default since review became
	// it) overrides singleOperatorDiscard; kept for scripts that pass it.
	discardApproval bool
	// The keyring argoctl decrypts with and rekey encrypts with
	// ($ARGO_CIPHER_KEYS, $ARGO_CIPHER_ENCRYPT_WITH; cipher.go).
	cipherKeys, cipherEncryptWith string
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.dsn, "dsn", g.dsn, `database: "sqlite:PATH" or "mysql:user:pw@tcp(host:3306)/db" (default $ARGO_DSN)`)
	fs.StringVar(&g.output, "o", g.output, "output format: table or json")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "bound on the whole command's database work")
	fs.StringVar(&g.operator, "operator", g.operator, "who changes are recorded as made by (default: the OS user)")
	fs.BoolVar(&g.singleOperatorDiscard, "single-operator-discard", g.singleOperatorDiscard, "let one operator discard alone, without a second's approval (default $ARGO_SINGLE_OPERATOR_DISCARD)")
	fs.BoolVar(&g.discardApproval, "discard-approval", g.discardApproval, "discards need a second operator (the default; overrides -single-operator-discard)")
}

// env is one invocation's environment.
type env struct {
	ctx    context.Context
	g      *globals
	stdout io.Writer
}

func (e *env) json() bool { return e.g.output == "json" }

var commands = map[string]func(e *env, args []string) error{
	"stats":   cmdStats,
	"list":    cmdList,
	"show":    cmdShow,
	"requeue": cmdRequeue,
	"discard": cmdDiscard,
	"cancel":  cmdCancel,
	"migrate": cmdMigrate,

	"discard-request": cmdDiscardRequest,
	"discard-approve": cmdDiscardApprove,
	"discard-reject":  cmdDiscardReject,
	"force-fail":      cmdForceFail,
	"transient-fail":  cmdTransientFail,
	"run":             cmdRunNow,
	"version":         cmdVersion,
	"flow":            cmdFlow,
	"serve":           cmdServe,
	"backlog":         cmdBacklog,
	"rekey":           cmdRekey,
}

// run is argoctl without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	g := &globals{dsn: getenv("ARGO_DSN"), output: "table", timeout: 30 * time.Second, operator: operatorName(getenv),
		singleOperatorDiscard: truthy(getenv("ARGO_SINGLE_OPERATOR_DISCARD")),
		cipherKeys:            getenv("ARGO_CIPHER_KEYS"), cipherEncryptWith: getenv("ARGO_CIPHER_ENCRYPT_WITH")} // cipher.go
	fs := newFlagSet("argoctl")
	g.register(fs)
	err := fs.Parse(args)
	if err == nil && fs.NArg() == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) || (err == nil && fs.Arg(0) == "help") {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if err != nil {
		err = usagef("%v (run argoctl help)", err)
	}
	if err == nil {
		name := fs.Arg(0)
		cmd, ok := commands[name]
		if !ok {
			err = usagef("unknown command %q (run argoctl help)", name)
		} else {
			err = cmd(&env{ctx: ctx, g: g, stdout: stdout}, fs.Args()[1:])
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "argoctl: "+oneLine(err))
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// check validates the global flags (after the command parsed its own).
func (g *globals) check() error {
	if g.output != "table" && g.output != "json" {
		return usagef("-o %q: want table or json", g.output)
	}
	if g.timeout <= 0 {
		return usagef("-timeout must be positive")
	}
	return nil
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses a command's flags, which may come before, between and after
// its positional arguments, and returns the positional ones.
func parse(e *env, fs *flag.FlagSet, args []string) ([]string, error) {
	e.g.register(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v (run argoctl help)", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return pos, e.g.check()
}

// oneLine keeps an error to one line, without the library's "argo: " prefix.
func oneLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	return strings.TrimPrefix(msg, "argo: ")
}

// conn is an open database.
type conn struct {
	db      *sql.DB
	dialect string
	in      *runtime.Inspector // with argoctl's clock
}

// open connects to the database and checks that it answers and (with
// wantSchema) holds argo's tables. The caller closes conn.db.
func open(e *env, wantSchema bool) (*conn, error) {
	if e.g.dsn == "" {
		return nil, usagef("no database: set -dsn or ARGO_DSN (\"sqlite:PATH\" or \"mysql:user:pw@tcp(host:3306)/db\")")
	}
	if wantSchema {
		// Opening a missing SQLite file would create an empty one: say so instead.
		if path, ok := sqlitePath(e.g.dsn); ok {
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("sqlite database %s: %w (create it with argoctl migrate)", path, errors.Unwrap(err))
			}
		}
	}
	db, dialect, err := runtime.OpenDB(e.g.dsn)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(e.ctx, min(e.g.timeout, 10*time.Second))
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, connectError(e.g.dsn, err)
	}
	in := runtime.NewInspector(db, dialect)
	in.Now = now
	in.Operator = e.g.operator
	in.Source = "argoctl" // refused changes are counted as argoctl's (docs/errors.md)
	if in.Operator == "" {
		in.Operator = anonymousOperator
	}
	in.SingleOperatorDiscard = e.g.singleOperatorDiscard && !e.g.discardApproval
	if wantSchema {
		if err := in.CheckSchema(pctx); err != nil {
			db.Close()
			return nil, err
		}
	}
	return &conn{db: db, dialect: dialect, in: in}, nil
}

// sqlitePath returns the file a "sqlite:" DSN names.
func sqlitePath(dsn string) (string, bool) {
	if !strings.HasPrefix(dsn, "sqlite:") {
		return "", false
	}
	p := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p, p != "" && p != ":memory:"
}

// withDB runs fn with an Inspector and a context bounded by -timeout.
func withDB(e *env, fn func(ctx context.Context, in *runtime.Inspector) error) error {
	ctx, cancel := context.WithTimeout(e.ctx, e.g.timeout)
	defer cancel()
	e.ctx = ctx
	c, err := open(e, true)
	if err != nil {
		return err
	}
	defer c.db.Close()
	return fn(ctx, c.in)
}
