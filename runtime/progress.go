package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// MaxProgressNote is the most characters (runes) of a progress note
// ReportProgress accepts: 200, the size of the progress_note columns.
const MaxProgressNote = argotype.MaxProgressNote

// ProgressInterval is the least time between two writes of one task's
// progress by lease renewals: 1 second. Renewals come every
// LeaseDuration/3 (10 s by default); one that comes sooner than this after
// the last one that carried a task's progress leaves its new reports for
// a later renewal. The finish writes the attempt's last report whatever
// the interval.
const ProgressInterval = time.Second

// ErrNotInAttempt is returned by ReportProgress called with a context that
// is not an attempt's.
var ErrNotInAttempt = errors.New("argo: ReportProgress called outside an attempt: call it with the context argo passed to the task's function (or one derived from it)")

// ErrAttemptEnded is returned by ReportProgress called after the attempt's
// function returned (from a goroutine it left running): the attempt's
// progress was recorded as it was when the function returned.
var ErrAttemptEnded = errors.New("argo: ReportProgress called after the attempt's function returned: report from the function itself, before it returns")

// ReportProgress records the progress of the attempt running with ctx:
// fraction is the share done, 0 to 1, and note (at most MaxProgressNote
// characters of UTF-8, no NUL; may be empty) says what it is at. It costs
// no statement of its own: the latest report rides on the next lease
// renewal (every LeaseDuration/3), at most one write per task per
// ProgressInterval, and the last report before the function returns is
// written with the attempt's outcome, on the task row and, for an attempt
// that does not succeed, on its history row (docs/progress.md). A report
// is fenced like every write of the attempt: once the lease is lost it is
// never written. Call it from the function, as often as you like.
//
// It returns ErrNotInAttempt outside an attempt (a fallback has none),
// ErrAttemptEnded after the function returned, an error wrapping
// ErrLeaseLost once the lease is known lost, and an error saying what to
// change for a fraction that is NaN or outside [0, 1] or a note that is
// too long, not UTF-8 or holds NUL; the report is then not kept (the
// previous one stands).
func ReportProgress(ctx context.Context, fraction float64, note string) error {
	a, _ := ctx.Value(attemptKey{}).(*attemptInfo)
	if a == nil || a.progress.rt == nil { // none, or a fallback's
		return ErrNotInAttempt
	}
	box := &a.progress
	if math.IsNaN(fraction) || fraction < 0 || fraction > 1 {
		return fmt.Errorf("argo: ReportProgress: fraction %v is not between 0 and 1: pass the share of the work done, 0 (none) to 1 (all)", fraction)
	}
	if !utf8.ValidString(note) {
		return fmt.Errorf("argo: ReportProgress: the note is not valid UTF-8: convert it first (strings.ToValidUTF8)")
	}
	if strings.IndexByte(note, 0) >= 0 {
		return fmt.Errorf("argo: ReportProgress: the note holds a NUL byte: remove it")
	}
	if n := utf8.RuneCountInString(note); n > MaxProgressNote {
		return fmt.Errorf("argo: ReportProgress: the note has %d characters, more than the %d stored: shorten it", n, MaxProgressNote)
	}
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		return fmt.Errorf("argo: ReportProgress: %w: the attempt's progress and outcome are not recorded", ErrLeaseLost)
	}
	return box.report(fraction, note)
}

// progressBox is the progress of one attempt: its latest report, how many
// it made and how many of them a renewal wrote. It lives in the attempt's
// context value (attemptInfo): an attempt that never reports costs no
// allocation and no lock of its own for it. Its first report registers it
// in the runtime's progressSet, where renewals find it.
type progressBox struct {
	rt  *Runtime // its clock (Runtime.now) and progressSet; nil: a fallback's
	key leaseKey // the attempt's lease

	// registered: in rt.progress (set holding rt.progress.mu and mu).
	registered atomic.Bool

	mu    sync.Mutex
	last  storage.LeaseProgress // latest report (At 0: none)
	seq   int                   // reports made
	sent  int                   // seq of the report a confirmed renewal wrote
	wrote time.Time             // when that renewal was sent (time.Now's clock)
	ended bool                  // the function returned: no more reports
}

func (b *progressBox) report(fraction float64, note string) error {
	if !b.registered.Load() {
		b.rt.progress.register(b) // the first report: renewals carry it from now on
	}
	at := toMillis(b.rt.now())
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return ErrAttemptEnded
	}
	b.last.Fraction, b.last.Note, b.last.At = fraction, note, max(at, 1)
	b.seq++
	return nil
}

// end returns the attempt's last report as its function returns; later
// reports are refused (and no longer register the box).
func (b *progressBox) end() progressFinal {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	return progressFinal(b.last)
}

// progressFinal is an attempt's last report (At 0: none).
type progressFinal storage.LeaseProgress

// fill puts the report on the attempt's record h, which its finish writes.
func (f progressFinal) fill(h *Attempt) {
	if f.At > 0 {
		h.Progress, h.ProgressNote, h.ProgressAt = f.Fraction, f.Note, f.At
	}
}

// attemptProgress returns the context of attempt lease of t, derived from
// parent, and the attempt's progress box, which ReportProgress finds in it.
// The box is not registered until the first report.
func (rt *Runtime) attemptProgress(parent context.Context, t *Task, lease leaseKey) (context.Context, *progressBox) {
	a := &attemptInfo{taskID: t.ID, attempt: t.ExecuteTimes, name: t.Name, progress: progressBox{rt: rt, key: lease}}
	return context.WithValue(parent, attemptKey{}, a), &a.progress
}

// progressSet is the progress boxes of the attempts running here that
// reported, by lease.
type progressSet struct {
	mu sync.Mutex
	m  map[leaseKey]*progressBox
}

// register adds b at its first report, unless its attempt ended (a report
// racing the function's return: the report is refused, and nothing is
// left in the set).
func (p *progressSet) register(b *progressBox) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.registered.Load() {
		return
	}
	if p.m == nil {
		p.m = map[leaseKey]*progressBox{}
	}
	p.m[b.key] = b
	b.registered.Store(true)
}

// close ends b (if its attempt did not) and forgets it if it registered:
// a box that never reported costs no lock of the set.
func (p *progressSet) close(b *progressBox) {
	b.end()
	if !b.registered.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[b.key] == b {
		delete(p.m, b.key)
	}
}

// progressCarry is a report a renewal carries, and the box's seq then.
type progressCarry struct {
	box *progressBox
	seq int
}

// due returns the reports the renewal of keys, sent at sent, carries: of
// each attempt with a report no renewal wrote yet, and none written in the
// last ProgressInterval, the latest.
func (p *progressSet) due(keys []leaseKey, sent time.Time) ([]storage.LeaseProgress, []progressCarry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) == 0 {
		return nil, nil
	}
	var prog []storage.LeaseProgress
	var carry []progressCarry
	for _, k := range keys {
		b := p.m[k]
		if b == nil {
			continue
		}
		b.mu.Lock()
		if b.seq > b.sent && (b.wrote.IsZero() || sent.Sub(b.wrote) >= ProgressInterval) {
			r := b.last
			r.Key = k
			prog = append(prog, r)
			carry = append(carry, progressCarry{box: b, seq: b.seq})
		}
		b.mu.Unlock()
	}
	return prog, carry
}

// written marks the reports carried by a renewal sent at sent, and
// confirmed, as written (those of leases it found lost are not: they will
// not be written at all).
func (p *progressSet) written(carry []progressCarry, prog []storage.LeaseProgress, lost map[leaseKey]bool, sent time.Time) {
	for i, c := range carry {
		if lost[prog[i].Key] {
			continue
		}
		c.box.mu.Lock()
		c.box.sent, c.box.wrote = max(c.box.sent, c.seq), sent
		c.box.mu.Unlock()
	}
}
