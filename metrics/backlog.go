package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/argo-retry/argo/runtime"
)

// The backlog gauges (docs/backlog.md): the tasks due now, the age of the
// oldest and the held retries, per task name, tenant and flow group, the
// BacklogTop of each with the most due and one "(other)" series for the
// rest; read with Inspector.BacklogTop at scrape time, at most once per
// BacklogInterval (a scrape in between gets the last read).
type backlogGauges struct {
	enabled  bool
	top      int
	interval time.Duration
	now      func() time.Time

	// One family per figure and dimension: due, oldest age, held.
	due, age, held [3]*prometheus.Desc
	total          [3]*prometheus.Desc
	upDesc         *prometheus.Desc
	errs           prometheus.Counter
	reads          prometheus.Counter

	mu     sync.Mutex
	last   *runtime.Backlog
	readAt time.Time
	ok     bool
}

var backlogDims = [3]struct{ name, label, help string }{
	{"", "task", "task name"},
	{"tenant_", "tenant", "tenant (\"\": none)"},
	{"group_", "group", "flow group"},
}

func newBacklogGauges(ns string, cl prometheus.Labels, opts Options) *backlogGauges {
	b := &backlogGauges{enabled: opts.Backlog, top: opts.BacklogTop, interval: opts.BacklogInterval, now: time.Now}
	if b.top <= 0 {
		b.top = runtime.DefaultBacklogTop
	}
	if b.interval <= 0 {
		b.interval = 10 * time.Second
	}
	other := " Read at scrape time, at most once per Options.BacklogInterval; the names beyond the top Options.BacklogTop are summed in the series " + runtime.BacklogOther + "."
	for i, d := range backlogDims {
		b.due[i] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", d.name+"due_tasks"),
			"Tasks a worker could start now (pending, retrying or exhausted, due), per "+d.help+"."+other, []string{d.label}, cl)
		b.age[i] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", d.name+"oldest_due_seconds"),
			"How long the oldest due task has been due (0: none due), per "+d.help+"."+other, []string{d.label}, cl)
		b.held[i] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", d.name+"held_retries"),
			"Retries held by an instance (started by it at their due time, without a claim), per "+d.help+"."+other, []string{d.label}, cl)
	}
	b.total[0] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", "total_due_tasks"), "Tasks a worker could start now, all names and tenants.", nil, cl)
	b.total[1] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", "total_oldest_due_seconds"), "How long the oldest due task of all has been due (0: none due).", nil, cl)
	b.total[2] = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", "total_held_retries"), "Retries held by instances, all names and tenants.", nil, cl)
	b.upDesc = prometheus.NewDesc(prometheus.BuildFQName(ns, "backlog", "up"), "1 if the last backlog read succeeded, else 0 (the argo_backlog_* gauges are then left out).", nil, cl)
	b.errs = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "backlog", Name: "read_errors_total",
		Help: "Backlog reads that failed or timed out.", ConstLabels: cl})
	b.reads = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "backlog", Name: "reads_total",
		Help: "Backlog reads of the database by this process (at most one per BacklogInterval, whatever the scrapes).", ConstLabels: cl})
	return b
}

func (b *backlogGauges) describe(ch chan<- *prometheus.Desc) {
	if !b.enabled {
		return
	}
	for i := range backlogDims {
		ch <- b.due[i]
		ch <- b.age[i]
		ch <- b.held[i]
		ch <- b.total[i]
	}
	ch <- b.upDesc
	b.errs.Describe(ch)
	b.reads.Describe(ch)
}

// read returns the last backlog read if it is younger than the interval,
// else reads it again (one read at a time: concurrent scrapes wait for it).
func (b *backlogGauges) read(in *runtime.Inspector, timeout time.Duration) (*runtime.Backlog, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.readAt.IsZero() && b.now().Sub(b.readAt) < b.interval {
		return b.last, b.ok
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b.reads.Inc()
	bl, err := in.BacklogTop(ctx, b.top)
	b.readAt = b.now()
	if err != nil {
		b.errs.Inc()
		b.last, b.ok = nil, false
		return nil, false
	}
	b.last, b.ok = bl, true
	return bl, true
}

func (b *backlogGauges) collect(ch chan<- prometheus.Metric, in *runtime.Inspector, timeout time.Duration) {
	if !b.enabled {
		return
	}
	if in != nil {
		bl, ok := b.read(in, timeout)
		up := 0.0
		if ok {
			up = 1
			for i, lines := range [3][]runtime.BacklogLine{bl.ByTask, bl.ByTenant, bl.ByGroup} {
				for _, l := range lines {
					ch <- prometheus.MustNewConstMetric(b.due[i], prometheus.GaugeValue, float64(l.Due), l.Name)
					ch <- prometheus.MustNewConstMetric(b.age[i], prometheus.GaugeValue, l.OldestAge.Seconds(), l.Name)
					ch <- prometheus.MustNewConstMetric(b.held[i], prometheus.GaugeValue, float64(l.Held), l.Name)
				}
			}
			ch <- prometheus.MustNewConstMetric(b.total[0], prometheus.GaugeValue, float64(bl.Total.Due))
			ch <- prometheus.MustNewConstMetric(b.total[1], prometheus.GaugeValue, bl.Total.OldestAge.Seconds())
			ch <- prometheus.MustNewConstMetric(b.total[2], prometheus.GaugeValue, float64(bl.Total.Held))
		}
		ch <- prometheus.MustNewConstMetric(b.upDesc, prometheus.GaugeValue, up)
	}
	b.errs.Collect(ch)
	b.reads.Collect(ch)
}
