// Command chaosworker is the small service the chaos test runs as several OS
// processes and kills with SIGKILL: one argo runtime with one task, whose
// every attempt appends "start" and "end" lines to this process's log file
// (O_APPEND, fsync after each line), so that what ran survives a kill -9.
//
// Log line format (space separated):
//
//	<unix ms> <pid> <task id> <attempt> start
//	<unix ms> <pid> <task id> <attempt> end ok|fail
//
// Task arguments are {"n": N}; a third of the tasks (N%3 == 0) fail
// transiently on their first one or two attempts (see chaos.Failures), or
// with -fail-every K the tasks with N%K == 0 fail once.
//
// With -submit-to above -submit-from the process also submits the tasks N
// in [from, to) itself, as a service's callers would (see submit.go), and
// logs each submit to -submit-log.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/argo-retry/argo/internal/chaos"
	"github.com/argo-retry/argo/runtime"
)

func main() {
	dsn := flag.String("dsn", "", `database, "mysql:user:pw@tcp(host:port)/db" or "sqlite:PATH"`)
	id := flag.String("id", "", "instance id (lease owner)")
	workers := flag.Int("workers", 8, "attempts run at once")
	logPath := flag.String("log", "", "attempt log file (default <id>.log)")
	lease := flag.Duration("lease", 2*time.Second, "lease duration")
	heartbeat := flag.Duration("heartbeat", 300*time.Millisecond, "heartbeat interval")
	poll := flag.Duration("poll", 50*time.Millisecond, "poll interval")
	work := flag.Duration("work", 3*time.Millisecond, "time one attempt takes")
	shards := flag.Int("shards", 64, "shard space")
	instanceTimeout := flag.Duration("instance-timeout", 0, "instance timeout (default 3×heartbeat)")
	failEvery := flag.Int("fail-every", 0, "tasks with n%K == 0 fail once (default: chaos.Failures)")
	var sub submitConfig
	flag.IntVar(&sub.from, "submit-from", 0, "first task n this process submits")
	flag.IntVar(&sub.to, "submit-to", 0, "task n this process stops submitting before (none when not above -submit-from)")
	flag.StringVar(&sub.logPath, "submit-log", "", "submit log file (default <id>.submits)")
	flag.StringVar(&sub.resume, "resume", "", "comma-separated submit logs of earlier incarnations: the tasks they logged are not submitted again")
	flag.IntVar(&sub.backlog, "backlog", 500, "submitting waits while this many tasks are unfinished")
	flag.DurationVar(&sub.timeout, "submit-timeout", 5*time.Second, "deadline of one submit")
	flag.BoolVar(&sub.claimed, "claimed", false, "submit with RunAt now, so that pollers (of any process) claim every first attempt instead of the submitting process running it at once")
	flag.Parse()
	if *dsn == "" || *id == "" {
		fmt.Fprintln(os.Stderr, "chaosworker: -dsn and -id are required")
		os.Exit(2)
	}
	if *logPath == "" {
		*logPath = *id + ".log"
	}
	if sub.logPath == "" {
		sub.logPath = *id + ".submits"
	}
	failures := chaos.Failures
	if *failEvery > 0 {
		k := *failEvery
		failures = func(n int) int {
			if n%k == 0 {
				return 1
			}
			return 0
		}
	}
	cfg := runtime.Config{
		DSN: *dsn, InstanceID: *id, Workers: *workers, PollInterval: *poll, LeaseDuration: *lease,
		HeartbeatInterval: *heartbeat, InstanceTimeout: *instanceTimeout, Shards: *shards, ShutdownTimeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if err := run(cfg, *logPath, *work, failures, sub); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}

// attemptLog appends fsynced lines to one file.
type attemptLog struct {
	mu  sync.Mutex
	f   *os.File
	pid int
}

func (l *attemptLog) line(id int64, attempt int, what string) error {
	s := fmt.Sprintf("%d %d %d %d %s\n", time.Now().UnixMilli(), l.pid, id, attempt, what)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(s); err != nil {
		return err
	}
	return l.f.Sync()
}

func run(cfg runtime.Config, logPath string, work time.Duration, failures func(int) int, sub submitConfig) error {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	alog := &attemptLog{f: f, pid: os.Getpid()}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		return err
	}
	def := chaos.Def()
	def.Run = func(ctx context.Context, raw []byte) error {
		tid, attempt, _ := runtime.AttemptFrom(ctx)
		if err := alog.line(tid, attempt, "start"); err != nil {
			return err
		}
		var a chaos.Args
		if err := json.Unmarshal(raw, &a); err != nil {
			return runtime.Undecodable(err)
		}
		time.Sleep(work)
		if attempt <= failures(a.N) {
			if err := alog.line(tid, attempt, "end fail"); err != nil {
				return err
			}
			return errors.New("transient failure")
		}
		return alog.line(tid, attempt, "end ok")
	}
	if err := rt.Register(def); err != nil {
		return err
	}
	if sub.to > sub.from {
		s, err := newSubmitter(cfg.DSN, rt, def, sub)
		if err != nil {
			return err
		}
		defer s.close()
		go s.run(ctx)
	}

	// Exit with the test that started us, should it die without stopping us.
	parent := os.Getppid()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return rt.Stop(sctx)
		case <-tick.C:
			if os.Getppid() != parent {
				stop()
			}
		}
	}
}
