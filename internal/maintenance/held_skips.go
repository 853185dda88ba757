package maintenance

import (
	"slices"
	"sync"
	"time"
)

// skippedHolds gathers the held retries whose start found them changed (an
// operator discarded them, or another instance claimed them after their hold
// ran out), so that a bulk discard makes one log line, not one per task.
//
// The first skip opens a window of Hold (plus HeldStartLead): every retry
// held when the operator acted falls due, and is skipped, within it. The
// summary is logged when the window closes, or at Stop.
type skippedHolds struct {
	mu    sync.Mutex
	tasks int
	names map[string]int // skipped retries per task name
	ids   []int64        // the first maxLoggedNames skipped
	timer *time.Timer    // closes the window; nil while none is open
}

// noteSkipped counts held retries whose start was refused.
func (hs *HeldRetries[H]) noteSkipped(skipped []*heldRetry[H]) {
	if len(skipped) == 0 {
		return
	}
	s := &hs.skipped
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]int{}
	}
	for _, e := range skipped {
		s.tasks++
		s.names[e.t.Name]++
		if len(s.ids) < maxLoggedNames {
			s.ids = append(s.ids, e.t.ID)
		}
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(max(hs.cfg.Hold, 0)+HeldStartLead, hs.logSkipped)
	}
}

// logSkipped logs the skips gathered so far, in one WARN line, and closes
// the window.
func (hs *HeldRetries[H]) logSkipped() {
	s := &hs.skipped
	s.mu.Lock()
	tasks, names, ids := s.tasks, s.names, s.ids
	s.tasks, s.names, s.ids = 0, nil, nil
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	if tasks == 0 {
		return
	}
	slices.Sort(ids)
	hs.cfg.Logger.Warn("argo: held retries not started: they changed meanwhile (discarded, or claimed elsewhere after their hold ran out)",
		"tasks", tasks, "names", describeNameCounts(names), "first_task_ids", ids)
}
