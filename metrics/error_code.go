package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/argo-retry/argo/runtime"
)

// errorCodes counts failed attempts by task and error code
// (argo_attempt_errors_total), at most limit series; and describes the
// refused operator transitions read from the database at scrape time
// (argo_operator_transitions_refused_total).
type errorCodes struct {
	vec          *prometheus.CounterVec
	operatorDesc *prometheus.Desc
	limit        int

	mu   sync.Mutex
	seen map[[2]string]bool
}

// OtherCode is the code label of the attempts counted after
// Options.ErrorCodes (task, code) series exist.
const OtherCode = "(other)"

func newErrorCodes(ns string, cl prometheus.Labels, limit int) *errorCodes {
	if limit <= 0 {
		limit = 200
	}
	return &errorCodes{
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "attempt_errors_total", ConstLabels: cl,
			Help: "Failed attempts of this process by task and error code (runtime.Coded, Config.ErrorCode); attempts without a code are not counted here (argo_attempts_total counts every attempt). At most Options.ErrorCodes series; later pairs count as code=\"" + OtherCode + "\"."}, []string{"task", "code"}),
		operatorDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "operator_transitions_refused_total"),
			"State changes operators asked for (argoctl, the console, the Inspector API: source) that the state machine refused, from the task's state to the one asked for; counted in the database (argo_refused_transition), so every instance reports the same cluster-wide total: aggregate with max, not sum. Read at scrape time.",
			[]string{"code", "source", "from", "to"}, cl),
		limit: limit,
		seen:  map[[2]string]bool{},
	}
}

// AttemptErrorCode implements runtime.ErrorCodeObserver.
func (c *Collector) AttemptErrorCode(task, code string) {
	e := c.codes
	key := [2]string{task, code}
	e.mu.Lock()
	if !e.seen[key] {
		if len(e.seen) >= e.limit {
			code = OtherCode
		} else {
			e.seen[key] = true
		}
	}
	e.mu.Unlock()
	e.vec.WithLabelValues(task, code).Inc()
}

// collectOperatorRefused reports the refused operator transitions (a
// database before migration 000021 reports none).
func (c *Collector) collectOperatorRefused(ch chan<- prometheus.Metric, in *runtime.Inspector) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	counts, err := in.RefusedTransitions(ctx)
	cancel()
	if err != nil {
		return
	}
	for _, r := range counts {
		ch <- prometheus.MustNewConstMetric(c.codes.operatorDesc, prometheus.CounterValue, float64(r.Refused), runtime.CodeTransitionInvalid, r.Source, r.From, r.To)
	}
}
