package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/internal/chaos"
	"github.com/argo-retry/argo/runtime"
)

// Submit log lines (space separated, fsynced one by one):
//
//	<unix ms> <pid> <task id> <n> submitted <unix ms of the first try>
//	<unix ms> <pid> <task id> <n> duplicate <unix ms of the first try>
//	<unix ms> <pid> 0 <n> error <kind> <ms the call took>
//	<unix ms> <pid> 0 0 done
//
// "duplicate": the task's unique key was taken already, by an earlier try
// whose answer was lost or an earlier incarnation killed before it could
// log it; the task id is that row's. An error's kind is not-persisted,
// outcome-unknown or other (see runtime.ErrNotPersisted and
// ErrOutcomeUnknown). Every task n is submitted with UniqueKey n, so trying
// again after any error never makes a second task.

// submitConfig is what -submit-* and friends set.
type submitConfig struct {
	from, to int
	logPath  string
	resume   string
	backlog  int
	timeout  time.Duration
	claimed  bool // submit with RunAt now: a poller claims every first attempt
}

// submitter submits the tasks n in [from, to), one at a time, as a caller
// of a service would, keeping the unfinished tasks below backlog.
type submitter struct {
	cfg  submitConfig
	rt   *runtime.Runtime
	def  *runtime.TaskDef
	db   *sql.DB // for the backlog count
	log  *attemptLog
	done map[int]bool // n submitted by an earlier incarnation
}

func newSubmitter(dsn string, rt *runtime.Runtime, def *runtime.TaskDef, cfg submitConfig) (*submitter, error) {
	s := &submitter{cfg: cfg, rt: rt, def: def, done: map[int]bool{}}
	for _, path := range strings.Split(cfg.resume, ",") {
		if path == "" {
			continue
		}
		if err := s.readDone(path); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(cfg.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	s.log = &attemptLog{f: f, pid: os.Getpid()}
	db, _, err := runtime.OpenDB(dsn)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.db = db
	return s, nil
}

func (s *submitter) close() {
	s.db.Close()
	s.log.f.Close()
}

// readDone marks the tasks an earlier incarnation's log says were submitted.
func (s *submitter) readDone(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || (fields[4] != "submitted" && fields[4] != "duplicate") {
			continue // a line cut short by the kill, an error, or done
		}
		if n, err := strconv.Atoi(fields[3]); err == nil {
			s.done[n] = true
		}
	}
	return sc.Err()
}

func (s *submitter) write(format string, args ...any) {
	line := fmt.Sprintf("%d %d "+format+"\n", append([]any{time.Now().UnixMilli(), s.log.pid}, args...)...)
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if _, err := s.log.f.WriteString(line); err == nil {
		s.log.f.Sync()
	}
}

func (s *submitter) run(ctx context.Context) {
	for n := s.cfg.from; n < s.cfg.to; n++ {
		if s.done[n] {
			continue
		}
		if !s.waitBacklog(ctx) {
			return
		}
		if !s.submit(ctx, n) {
			return
		}
	}
	s.write("0 0 done")
}

// submit submits task n until it is persisted (or ctx ends), logging
// every try that failed.
func (s *submitter) submit(ctx context.Context, n int) bool {
	raw, _ := json.Marshal(chaos.Args{N: n})
	call := runtime.Call{Task: s.def, Args: raw, UniqueKey: strconv.Itoa(n)}
	first := time.Now()
	for {
		if s.cfg.claimed {
			call.RunAt = time.Now()
		}
		began := time.Now()
		sctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
		id, err := s.rt.Submit(sctx, call)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		switch {
		case err == nil:
			s.write("%d %d submitted %d", id, n, first.UnixMilli())
			return true
		case errors.Is(err, runtime.ErrDuplicate) && id != 0:
			s.write("%d %d duplicate %d", id, n, first.UnixMilli())
			return true
		}
		kind := "other"
		switch {
		case errors.Is(err, runtime.ErrNotPersisted):
			kind = "not-persisted"
		case errors.Is(err, runtime.ErrOutcomeUnknown):
			kind = "outcome-unknown"
		}
		s.write("0 %d error %s %d", n, kind, time.Since(began).Milliseconds())
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// unfinished is the set of states of a task not yet done.
var unfinished = []any{runtime.StatePending, runtime.StateRunning, runtime.StateRetrying}

// waitBacklog waits while backlog tasks or more are unfinished. A count
// that fails (the database is out of reach) does not hold the submit back:
// the submit finds out for itself.
func (s *submitter) waitBacklog(ctx context.Context) bool {
	for {
		var open int
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := s.db.QueryRowContext(qctx, "SELECT COUNT(*) FROM argo_task WHERE task_status IN (?, ?, ?)", unfinished...).Scan(&open)
		cancel()
		if err != nil || open < s.cfg.backlog {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
