// Package metrics exposes what argo does as Prometheus metrics, for
// dashboards and alerts: how many tasks are submitted, how attempts end and
// how long they take, how late due tasks start, how many tasks sit in each
// state and how many are dead, and how often alerts fire, leases are
// rescued and claims fail.
//
// New returns a Collector. It is a runtime.Observer (set it as
// runtime.Config.Observer, and the runtime counts its events into it) and a
// prometheus.Collector that you register on your own registry:
//
//	m := metrics.New(metrics.Options{})
//	prometheus.MustRegister(m)
//	rt, err := runtime.Start(ctx, runtime.Config{DSN: dsn, Observer: m})
//	m.SetInspector(rt.Inspector()) // tasks per state, read at scrape time
//
// Event metrics (counters and histograms) count what this process saw since
// it started; sum them across instances. The table gauges (argo_tasks,
// argo_dead_tasks) are read from the database at scrape time and are the
// same on every instance: aggregate them with max, not sum, or scrape them
// from one instance only. When that read fails or times out, the scrape
// still succeeds: argo_inspector_up is 0 and argo_inspector_errors_total
// grows.
//
// With Options.Backlog, the argo_backlog_* gauges (tasks due now, the age of
// the oldest due task and held retries per task name, tenant and flow
// group, bounded to the top Options.BacklogTop and "(other)") are read at
// scrape time too, at most once per Options.BacklogInterval; they are a
// signal to scale workers on (docs/backlog.md).
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/argo-retry/argo/runtime"
)

// Options configures New. Every zero field takes the default its comment states.
type Options struct {
	// Namespace prefixes every metric name. Default "argo".
	Namespace string
	// ConstLabels are added to every metric (an application name, say).
	ConstLabels prometheus.Labels
	// Inspector, if set, is read at scrape time for argo_tasks{state} and
	// argo_dead_tasks. It may also be set later with SetInspector.
	Inspector *runtime.Inspector
	// ScrapeTimeout bounds the scrape-time database read. Default 5s.
	ScrapeTimeout time.Duration
	// DurationBuckets are the buckets of argo_attempt_duration_seconds.
	// Default 5ms … 5m.
	DurationBuckets []float64
	// LagBuckets are the buckets of argo_attempt_lag_seconds. Default 10ms … 1h.
	LagBuckets []float64
	// Backlog turns on the argo_backlog_* gauges (docs/backlog.md): tasks
	// due now, the age of the oldest and held retries, per task name,
	// tenant and flow group, read with the Inspector at scrape time.
	// Default false (off: no backlog read).
	Backlog bool
	// BacklogTop is how many task names, tenants and flow groups get a
	// series of their own; the rest are summed in one series "(other)".
	// Default 20 (runtime.DefaultBacklogTop).
	BacklogTop int
	// BacklogInterval is the least time between two backlog reads: a scrape
	// sooner than that after the last read gets its figures again (or, after
	// a failed read, argo_backlog_up 0 again). Default 10s.
	BacklogInterval time.Duration
	// ErrorCodes is how many (task, code) series argo_attempt_errors_total
	// has at most: a pair first seen after that many is counted with the
	// code "(other)" (codes are at most 64 bytes: runtime.Coded). Default
	// 200.
	ErrorCodes int
}

// Collector holds argo's metrics. Create it with New.
type Collector struct {
	submitted     *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	lag           prometheus.Histogram
	alerts        *prometheus.CounterVec
	rescues       *prometheus.CounterVec
	claimErrors   prometheus.Counter
	finished      *prometheus.CounterVec
	inspectorErrs prometheus.Counter
	refused       *prometheus.CounterVec
	channels      *prometheus.CounterVec // alert_channel.go
	codes         *errorCodes            // error_code.go

	tasksDesc, deadDesc, upDesc *prometheus.Desc
	// breakerDesc and openedDesc: each flow group's breaker, read at scrape time.
	breakerDesc, openedDesc *prometheus.Desc

	backlog *backlogGauges // backlog.go

	mu        sync.Mutex
	inspector *runtime.Inspector
	timeout   time.Duration
}

var (
	_ runtime.Observer                  = (*Collector)(nil)
	_ runtime.TransitionRefusedObserver = (*Collector)(nil)
	_ runtime.ErrorCodeObserver         = (*Collector)(nil)
	_ prometheus.Collector              = (*Collector)(nil)
)

// New returns a Collector with the given options.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "argo"
	}
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = 5 * time.Second
	}
	if opts.DurationBuckets == nil {
		opts.DurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}
	}
	if opts.LagBuckets == nil {
		opts.LagBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	}
	cl := opts.ConstLabels
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help, ConstLabels: cl}, labels)
	}
	return &Collector{
		submitted: counter("tasks_submitted_total", "Tasks written to argo_task by this process.", "task"),
		attempts:  counter("attempts_total", "Attempts (kind attempt) and fallback runs (kind fallback) that ended, by outcome: succeeded, failed, permanent, panicked, timeout.", "task", "kind", "outcome"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "attempt_duration_seconds",
			Help: "How long attempts and fallback runs took.", ConstLabels: cl, Buckets: opts.DurationBuckets}, []string{"task", "kind"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "attempt_lag_seconds",
			Help: "How late attempts started against their due time (execute_time).", ConstLabels: cl, Buckets: opts.LagBuckets}),
		alerts:      counter("alerts_fired_total", "Alert expressions that held (the alert action was queued).", "task"),
		rescues:     counter("lease_rescues_total", "Expired leases taken back from vanished workers (each counts as a failed attempt).", "task"),
		claimErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "claim_errors_total", Help: "Failed claims of due tasks (the database did not answer, say).", ConstLabels: cl}),
		finished:    counter("tasks_finished_total", "Tasks that reached a final state (succeeded, recovered, dead) in this process.", "task", "state"),
		inspectorErrs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "inspector_errors_total",
			Help: "Scrape-time reads of argo_task that failed or timed out (argo_tasks and argo_dead_tasks were left out).", ConstLabels: cl}),
		refused:   counter("transitions_refused_total", "State transitions refused (code "+runtime.CodeTransitionInvalid+"): outcomes of stale workers whose task was rescued, requeued, force-failed or discarded meanwhile, and moves the state machine forbids.", "code", "from", "to"),
		tasksDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "tasks"), "Tasks in argo_task by state, read at scrape time.", []string{"state"}, cl),
		// One series per tenant with dead letters, and always tenant=""
		// (tasks without a tenant); the ArgoDeadLettersGrowing rule keeps
		// every label but the instance's, so it alerts per tenant.
		deadDesc:    prometheus.NewDesc(prometheus.BuildFQName(ns, "", "dead_tasks"), "Dead tasks in argo_task not requeued (the dead letters an operator should requeue or discard), per tenant (\"\": none), read at scrape time.", []string{"tenant"}, cl),
		upDesc:      prometheus.NewDesc(prometheus.BuildFQName(ns, "", "inspector_up"), "1 if the last scrape-time read of argo_task succeeded, else 0.", nil, cl),
		breakerDesc: prometheus.NewDesc(prometheus.BuildFQName(ns, "", "flow_breaker_open"), "1 while a flow group's circuit breaker is not closed (open, half-open with a probe out, or opened by an operator), else 0; read at scrape time.", []string{"group", "state"}, cl),
		openedDesc:  prometheus.NewDesc(prometheus.BuildFQName(ns, "", "flow_breaker_opened"), "Times a flow group's circuit breaker has opened, read at scrape time.", []string{"group"}, cl),
		channels:    counter("alert_channel_messages_total", alertChannelHelp, "channel", "outcome"),
		backlog:     newBacklogGauges(ns, cl, opts),
		codes:       newErrorCodes(ns, cl, opts.ErrorCodes),
		inspector:   opts.Inspector,
		timeout:     opts.ScrapeTimeout,
	}
}

// SetInspector sets (or, with nil, removes) the Inspector read at scrape time.
func (c *Collector) SetInspector(in *runtime.Inspector) {
	c.mu.Lock()
	c.inspector = in
	c.mu.Unlock()
}

// Submitted implements runtime.Observer.
func (c *Collector) Submitted(task string) { c.submitted.WithLabelValues(task).Inc() }

// AttemptDone implements runtime.Observer.
func (c *Collector) AttemptDone(task, kind, outcome string, duration, lag time.Duration) {
	c.attempts.WithLabelValues(task, kind, outcome).Inc()
	c.duration.WithLabelValues(task, kind).Observe(duration.Seconds())
	if kind == "attempt" {
		c.lag.Observe(max(lag, 0).Seconds())
	}
}

// Finished implements runtime.Observer. Only final states are counted;
// retrying and exhausted are steps, already counted by argo_attempts_total.
func (c *Collector) Finished(task string, state runtime.State) {
	switch state {
	case runtime.StateSucceeded, runtime.StateRecovered, runtime.StateDead:
		c.finished.WithLabelValues(task, state.String()).Inc()
	}
}

// AlertFired implements runtime.Observer.
func (c *Collector) AlertFired(task string) { c.alerts.WithLabelValues(task).Inc() }

// LeaseRescued implements runtime.Observer.
func (c *Collector) LeaseRescued(task string) { c.rescues.WithLabelValues(task).Inc() }

// TransitionRefused implements runtime.TransitionRefusedObserver.
func (c *Collector) TransitionRefused(from, to runtime.State) {
	c.refused.WithLabelValues(runtime.CodeTransitionInvalid, from.String(), to.String()).Inc()
}

// ClaimError implements runtime.Observer.
func (c *Collector) ClaimError(error) { c.claimErrors.Inc() }

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.submitted, c.attempts, c.duration, c.lag, c.alerts, c.rescues, c.claimErrors, c.finished, c.inspectorErrs, c.refused, c.channels, c.codes.vec}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
	ch <- c.tasksDesc
	ch <- c.deadDesc
	ch <- c.upDesc
	ch <- c.breakerDesc
	ch <- c.openedDesc
	ch <- c.codes.operatorDesc
	c.backlog.describe(ch)
}

// Collect implements prometheus.Collector. With an Inspector it reads the
// task counts, bounded by Options.ScrapeTimeout.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	in := c.inspector
	c.mu.Unlock()
	if in != nil {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		counts, err := in.CountByState(ctx)
		var deadLetters map[string]int
		if err == nil {
			deadLetters, err = in.DeadLettersByTenant(ctx)
		}
		cancel()
		if err != nil {
			c.inspectorErrs.Inc()
			ch <- prometheus.MustNewConstMetric(c.upDesc, prometheus.GaugeValue, 0)
		} else {
			ch <- prometheus.MustNewConstMetric(c.upDesc, prometheus.GaugeValue, 1)
			for _, s := range runtime.AllStates {
				ch <- prometheus.MustNewConstMetric(c.tasksDesc, prometheus.GaugeValue, float64(counts[s]), s.String())
			}
			if _, ok := deadLetters[""]; !ok {
				ch <- prometheus.MustNewConstMetric(c.deadDesc, prometheus.GaugeValue, 0, "")
			}
			for tenant, n := range deadLetters {
				ch <- prometheus.MustNewConstMetric(c.deadDesc, prometheus.GaugeValue, float64(n), tenant)
			}
		}
		c.collectFlow(ch, in)
		c.collectOperatorRefused(ch, in)
	}
	c.backlog.collect(ch, in, c.timeout)
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}

// collectFlow reports each flow group's breaker (a database without
// argo_flow, before migration 000006, reports none).
func (c *Collector) collectFlow(ch chan<- prometheus.Metric, in *runtime.Inspector) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	groups, err := in.FlowGroups(ctx)
	cancel()
	if err != nil {
		return
	}
	for _, g := range groups {
		open := 1.0
		if g.Breaker == "closed" {
			open = 0
		}
		ch <- prometheus.MustNewConstMetric(c.breakerDesc, prometheus.GaugeValue, open, g.Group, g.Breaker)
		ch <- prometheus.MustNewConstMetric(c.openedDesc, prometheus.CounterValue, float64(g.Opened), g.Group)
	}
}
