// Command faultworker is the service the fault checker runs as several OS
// processes (internal/faultcheck): one argo runtime with the checker's
// tasks, which also submits its slot's stream of seeded operations
// (faultcheck.Generate) until -submit-until, and appends every submit (with
// the wrapper's answer) and every execution (start, end, when its context
// ended) to its history file, fsynced line by line (faultcheck.Writer), so
// that what ran survives kill -9.
//
// SIGTERM stops it gracefully (Runtime.Stop mid-attempt). Its clock
// (Config.Now) is off by the duration written in -clock-file, if any, read
// at start: the nemesis restarts a worker with a clock offset.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/argo-retry/argo/internal/faultcheck"
	"github.com/argo-retry/argo/runtime"
)

// exitStopErr is the exit status after a Stop that returned an error.
const exitStopErr = 4

type config struct {
	dsn, id, hist, clockFile string
	directDSN                string // the server without the fault proxy (big calls)
	slot, firstOp            int
	seed                     uint64
	until                    time.Time
	features                 faultcheck.Features
	rt                       runtime.Config
}

func main() {
	var c config
	var untilMS int64
	var feats string
	flag.StringVar(&c.dsn, "dsn", "", `database, "mysql:user:pw@tcp(host:port)/db" or "sqlite:PATH"`)
	flag.StringVar(&c.id, "id", "", "instance id (lease owner), e.g. w1.0: slot 1, incarnation 0")
	flag.IntVar(&c.slot, "slot", 0, "the slot whose operations this process submits")
	flag.Uint64Var(&c.seed, "seed", 1, "the run's seed")
	flag.IntVar(&c.firstOp, "first-op", 0, "the first operation to submit (a restarted incarnation goes on where the last stopped)")
	flag.Int64Var(&untilMS, "submit-until", 0, "Unix ms after which no operation begins")
	flag.StringVar(&feats, "features", "", "workload features (faultcheck.ParseFeatures)")
	flag.StringVar(&c.hist, "hist", "", "history file (default <id>.hist)")
	flag.StringVar(&c.directDSN, "direct-dsn", "", "the database without the fault proxy, for big calls (default -dsn)")
	flag.StringVar(&c.clockFile, "clock-file", "", "file holding this host's clock offset (a Go duration), read at start")
	workers := flag.Int("workers", 16, "attempts run at once")
	lease := flag.Duration("lease", 2*time.Second, "lease duration")
	heartbeat := flag.Duration("heartbeat", 300*time.Millisecond, "heartbeat interval")
	instanceTimeout := flag.Duration("instance-timeout", 0, "instance timeout (default 3×heartbeat)")
	poll := flag.Duration("poll", 50*time.Millisecond, "poll interval")
	flag.Parse()
	if c.dsn == "" || c.id == "" {
		fmt.Fprintln(os.Stderr, "faultworker: -dsn and -id are required")
		os.Exit(2)
	}
	if c.hist == "" {
		c.hist = c.id + ".hist"
	}
	c.until = time.UnixMilli(untilMS)
	var err error
	if c.features, err = faultcheck.ParseFeatures(feats); err != nil {
		fmt.Fprintln(os.Stderr, "faultworker:", err)
		os.Exit(2)
	}
	c.rt = runtime.Config{
		DSN: c.dsn, InstanceID: c.id, Workers: *workers, PollInterval: *poll, LeaseDuration: *lease,
		HeartbeatInterval: *heartbeat, InstanceTimeout: *instanceTimeout, ShutdownTimeout: 10 * time.Second,
		// A call given back as undecodable (Args.GiveBack) waits this long
		// before it is claimed again (default 30 s).
		UnknownTaskDelay: 100 * time.Millisecond,
		Logger:           slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if c.features[faultcheck.FeatureCrypt] {
		c.rt.Cipher = faultcheck.CryptCipher(c.slot, "") // crypt.go
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "faultworker:", err)
		os.Exit(1)
	}
}

// worker is one process.
type worker struct {
	c      config
	h      *faultcheck.Writer
	rt     *runtime.Runtime
	db     *sql.DB
	defs   map[string]*runtime.TaskDef
	offset atomic.Int64 // the clock step, ns

	bigs sync.WaitGroup // big submits still waiting for their answer (submit.go)

	mu         sync.Mutex
	retryAfter map[int64]int  // deferrals this process answered, per task
	gaveBack   map[int64]bool // tasks whose first attempt this process gave back (Args.GiveBack)
}

func run(c config) error {
	h, err := faultcheck.NewWriter(c.hist, c.id)
	if err != nil {
		return err
	}
	defer h.Close()
	// The blocked sweeper's settles are written to the history (release.go).
	c.rt.Logger = slog.New(sweepWatcher{c.rt.Logger.Handler(), h})
	w := &worker{c: c, h: h, defs: faultcheck.Defs(), retryAfter: map[int64]int{}, gaveBack: map[int64]bool{}}
	w.readClock()
	// A constant offset keeps the monotonic reading, as a host whose clock is
	// off does: argo measures the offset at Start and at every heartbeat.
	c.rt.Now = func() time.Time { return time.Now().Add(time.Duration(w.offset.Load())) }
	// Under the operator feature the worker of slot InjectSlot honours its
	// transient-fail requests (the others leave them waiting). argo classifies every failed attempt with IsPermanent (after
	// the request was read, before the outcome is written): an attempt it
	// failed by injection is recorded there, by this host's clock, so that
	// the checker can see it began after a request (it answers false: the
	// classification is argo's own).
	if c.features[faultcheck.FeatureOperator] && c.slot == faultcheck.InjectSlot {
		c.rt.FaultInjection = true
		c.rt.IsPermanent = func(err error) bool {
			var inj *runtime.InjectedFailure
			if errors.As(err, &inj) {
				h.Write(faultcheck.Record{Kind: faultcheck.KindInjected, Task: inj.TaskID, Attempt: inj.Attempt})
			}
			return false
		}
	}

	if c.features[faultcheck.FeatureFair] && faultcheck.FairSlot(c.slot) {
		faultcheck.FairConfig(&c.rt) // fair.go
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := runtime.Start(ctx, c.rt)
	if err != nil {
		return err
	}
	w.rt = rt
	w.db = rt.DB()
	for name, d := range w.defs {
		d.Run = w.runner(name)
		if name == faultcheck.TaskFallback {
			d.Fallback = w.fallback(name)
		}
		if err := rt.Register(d); err != nil {
			return err
		}
	}
	h.Write(faultcheck.Record{Kind: faultcheck.KindReady})
	subDone := make(chan struct{})
	go func() { defer close(subDone); w.submitAll(ctx) }()

	// Exit with the test that started us, should it die without stopping us.
	parent := os.Getppid()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-subDone
			// A big submit answers (or is recorded still waiting, after
			// faultcheck.BigAnswerWithin) before a graceful exit: a
			// process that stopped is not a submit that hung.
			w.waitBigs(faultcheck.BigAnswerWithin + time.Second)
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := rt.Stop(sctx); err != nil {
				// Stop could not finish (the database is out of reach):
				// what it left is the next instance's to settle.
				fmt.Fprintln(os.Stderr, "faultworker: stopped with an error:", err)
				os.Exit(exitStopErr)
			}
			return nil
		case <-tick.C:
			if os.Getppid() != parent {
				stop()
			}
		}
	}
}

// readClock applies the offset in -clock-file (a Go duration), if any.
func (w *worker) readClock() {
	if w.c.clockFile == "" {
		return
	}
	b, err := os.ReadFile(w.c.clockFile)
	if err != nil {
		return
	}
	if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
		w.offset.Store(int64(d))
	}
}

// runner is the Run of task name: it logs its start and end, works for
// Args.WorkMS (honouring its context) and fails as Args say.
func (w *worker) runner(name string) func(ctx context.Context, raw []byte) error {
	return func(ctx context.Context, raw []byte) error {
		tid, attempt, _ := runtime.AttemptFrom(ctx)
		var a faultcheck.Args
		decErr := json.Unmarshal(raw, &a)
		w.h.Write(faultcheck.Record{Kind: faultcheck.KindExec, Ev: "start", Task: tid, Attempt: attempt, Name: name, Op: a.Op, Sum: faultcheck.Sum(raw)})
		end := w.ender(ctx, tid, attempt, name, a.Op, false)
		if decErr != nil {
			end(faultcheck.OutBadArgs)
			return runtime.Undecodable(decErr)
		}
		if a.GiveBack && attempt == 1 {
			w.mu.Lock()
			gave := w.gaveBack[tid]
			w.gaveBack[tid] = true
			w.mu.Unlock()
			if !gave {
				end(faultcheck.OutGivenBack)
				return runtime.Undecodable(errors.New("faultcheck: this instance cannot decode the arguments yet"))
			}
		}
		// A medium or long call reports its progress as it works
		// (faultcheck.InvProgress): each report is logged before it is made.
		steps := faultcheck.ProgressSteps(a.WorkMS)
		for step := 0; step <= steps; step++ {
			if step > 0 {
				note := faultcheck.ProgressNote(attempt, step, steps)
				frac := float64(step) / float64(steps+1)
				w.h.Write(faultcheck.Record{Kind: faultcheck.KindProgress, Ev: "report", Task: tid, Attempt: attempt, Name: name, Op: a.Op, Note: note, Frac: frac})
				_ = runtime.ReportProgress(ctx, frac, note) // refused once the lease is known lost: the context ends below
			}
			t := time.NewTimer(time.Duration(a.WorkMS) * time.Millisecond / time.Duration(steps+1))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				end(faultcheck.OutCancelled)
				return context.Cause(ctx)
			}
		}
		if a.RetryAfter > 0 {
			w.mu.Lock()
			n := w.retryAfter[tid]
			if n < a.Fail {
				w.retryAfter[tid]++
			}
			w.mu.Unlock()
			if n < a.Fail {
				end(faultcheck.OutRetryAfter)
				return runtime.Coded(runtime.RetryAfter(errors.New("faultcheck: busy"), time.Duration(a.RetryAfter)*time.Millisecond), faultcheck.FailCode(faultcheck.OutRetryAfter, attempt))
			}
		} else if attempt <= a.Fail {
			if a.Perm {
				end(faultcheck.OutPermanent)
				return runtime.Coded(runtime.Permanent(errors.New("faultcheck: permanent failure")), faultcheck.FailCode(faultcheck.OutPermanent, attempt))
			}
			end(faultcheck.OutFail)
			return runtime.Coded(errors.New("faultcheck: transient failure"), faultcheck.FailCode(faultcheck.OutFail, attempt)) // faultcheck.InvErrorCode
		}
		end(faultcheck.OutOK)
		return nil
	}
}

func (w *worker) fallback(name string) func(ctx context.Context, raw []byte, _ error) error {
	return func(ctx context.Context, raw []byte, _ error) error {
		tid, attempt, _ := runtime.AttemptFrom(ctx)
		var a faultcheck.Args
		_ = json.Unmarshal(raw, &a)
		w.h.Write(faultcheck.Record{Kind: faultcheck.KindExec, Ev: "start", Task: tid, Attempt: attempt, Name: name, Fallback: true, Op: a.Op, Sum: faultcheck.Sum(raw)})
		w.ender(ctx, tid, attempt, name, a.Op, true)(faultcheck.OutOK)
		return nil
	}
}

// ender returns the function that logs an execution's end, with when its
// context ended if it did before.
func (w *worker) ender(ctx context.Context, tid int64, attempt int, name, op string, fb bool) func(out string) {
	var done atomic.Int64
	stop := context.AfterFunc(ctx, func() { done.Store(time.Now().UnixMicro()) })
	return func(out string) {
		stop()
		r := faultcheck.Record{Kind: faultcheck.KindExec, Ev: "end", Task: tid, Attempt: attempt, Name: name, Fallback: fb, Op: op, Out: out}
		if at := done.Load(); at != 0 {
			r.CtxDone = at
			if cause := context.Cause(ctx); cause != nil {
				r.Cause = cause.Error()
			}
		}
		w.h.Write(r)
	}
}
