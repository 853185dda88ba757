package faultcheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// A history is what the worker processes saw, one JSON object a line in one
// file per process incarnation (<instance>.hist), each line written with
// O_APPEND and fsynced before the worker goes on, so that a kill -9 loses at
// most the line being written (a partial last line is ignored).

// Record kinds.
const (
	KindExec   = "exec"   // an attempt (or fallback) of a task, Ev start or end
	KindSubmit = "submit" // a call submitted, Ev begin or end
	KindReady  = "ready"  // the process's runtime has started (SIGTERM now stops it gracefully)
	KindDone   = "done"   // the process has submitted its last operation
	// KindInjected: an attempt (Task, Attempt) that argo failed by an
	// operator's transient-fail without calling the function, as the
	// worker saw it fail (written before its outcome is recorded).
	KindInjected = "injected"
)

// Submit answers, as the wrapper returned them.
const (
	AnswerNil           = "nil"             // persisted
	AnswerDuplicate     = "duplicate"       // ErrDuplicate: the unique key's row exists (ID)
	AnswerDuplicateNoID = "duplicate-no-id" // ErrDuplicateIDUnknown: the unique key's row exists, its id unread
	AnswerNotPersisted  = "not-persisted"   // ErrNotPersisted: certainly no row
	AnswerUnknown       = "unknown"         // ErrOutcomeUnknown, or the process died before the answer
	AnswerRolledBack    = "rolled-back"     // SubmitTx answered nil, and the caller rolled back: no row
	AnswerOther         = "other"           // anything else: a bug in the wrapper's contract
)

// Execution outcomes (Ev end).
const (
	OutOK         = "ok"
	OutFail       = "fail"
	OutPermanent  = "permanent"
	OutRetryAfter = "retry-after"
	OutCancelled  = "cancelled"  // ctx ended before the work did
	OutBadArgs    = "bad-args"   // the arguments did not decode
	OutGivenBack  = "given-back" // answered runtime.Undecodable on purpose (Args.GiveBack): given back, attempt undone
)

// Record is one line of a history.
type Record struct {
	Kind string `json:"k"`
	Ev   string `json:"ev"`
	At   int64  `json:"at"` // Unix µs, this host's wall clock (every process runs on one host)
	Inst string `json:"inst"`

	// exec
	Task     int64  `json:"task,omitempty"`
	Attempt  int    `json:"att,omitempty"`
	Name     string `json:"name,omitempty"`
	Fallback bool   `json:"fb,omitempty"`
	Out      string `json:"out,omitempty"`
	CtxDone  int64  `json:"ctx_done,omitempty"` // when the attempt's ctx ended (µs), if before its end
	Cause    string `json:"cause,omitempty"`    // context.Cause then

	// both
	Op  string `json:"op,omitempty"`  // the call (slot-op-call)
	Sum string `json:"sum,omitempty"` // Sum of the arguments as submitted / as received

	// submit
	Via      string   `json:"via,omitempty"` // submit, sync, tx, group, unique-again
	Answer   string   `json:"ans,omitempty"`
	ID       int64    `json:"id,omitempty"`
	Err      string   `json:"err,omitempty"`
	After    []string `json:"after,omitempty"` // ops this call runs after
	OrderKey string   `json:"okey,omitempty"`
	Unique   string   `json:"ukey,omitempty"`
	RunAt    int64    `json:"run_at,omitempty"` // µs, a scheduled call's due time
	Refuse   bool     `json:"refuse,omitempty"` // argo must refuse this call

	// progress (KindProgress): the report's note and fraction
	Note string  `json:"note,omitempty"`
	Frac float64 `json:"frac,omitempty"`
}

// Time returns At as a time.
func (r *Record) Time() time.Time { return time.UnixMicro(r.At) }

// Writer appends fsynced records to one history file.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	inst string
}

// NewWriter opens (appending) the history file path for instance inst.
func NewWriter(path, inst string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, inst: inst}, nil
}

// Write stamps r with the time and the instance and appends it, fsynced.
// A worker cannot go on without its history, so an error is fatal to it.
func (w *Writer) Write(r Record) {
	r.Inst = w.inst
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.At == 0 {
		r.At = time.Now().UnixMicro()
	}
	b, err := json.Marshal(r)
	if err == nil {
		_, err = w.f.Write(append(b, '\n'))
	}
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultworker: history:", err)
		os.Exit(3)
	}
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// ReadHistories reads every *.hist file in dir, in time order.
func ReadHistories(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.hist"))
	if err != nil {
		return nil, err
	}
	var all []Record
	for _, name := range files {
		recs, err := ReadHistory(name)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At < all[j].At })
	return all, nil
}

// ReadHistory reads one history file. Only its last line may be cut short
// (by a kill); a bad line before it is an error.
func ReadHistory(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var bad string
	for sc.Scan() {
		if bad != "" {
			return nil, fmt.Errorf("%s: bad line %q", path, bad)
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad = sc.Text()
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
