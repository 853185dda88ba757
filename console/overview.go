package console

import (
	"net/http"
	"sync"
	"time"
)

// overviewPage is GET ./: counts by name, tenant and state, the charts,
// the instances, the task names no instance runs, the breakers.
func (c *console) overviewPage(w http.ResponseWriter, r *http.Request) error {
	d, err := c.overview(r)
	if err != nil {
		return err
	}
	p := c.newPage(r, "Overview", d)
	p.Live = "api/overview.json"
	p.Charts = true
	p.Flash = breakerFlash(r.URL.Query(), d)
	render(w, http.StatusOK, "overview.html", p)
	return nil
}

func (c *console) overview(r *http.Request) (*overviewData, error) {
	return c.overviews.get(c.opts.OverviewMaxAge, func() (*overviewData, error) {
		return readOverview(r.Context(), c.inspector(r), c.opts.Now(), c.opts.Window, c.opts.Bucket, c.opts.CountCap)
	})
}

// overviewCache shares one read of the overview among the requests of
// Options.OverviewMaxAge: every open overview polls it, and each read
// counts the whole table. Requests that arrive during a read wait for it.
type overviewCache struct {
	mu   sync.Mutex
	data *overviewData
	at   time.Time // when data was read (monotonic)
}

// get returns the cached overview if younger than maxAge, else reads it.
// A failed read is not cached.
func (oc *overviewCache) get(maxAge time.Duration, read func() (*overviewData, error)) (*overviewData, error) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.data != nil && time.Since(oc.at) < maxAge {
		return oc.data, nil
	}
	d, err := read()
	if err != nil {
		return nil, err
	}
	oc.data, oc.at = d, time.Now()
	return d, nil
}

// forget drops the cached overview.
func (oc *overviewCache) forget() {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.data = nil
}

// overviewJSON is GET ./api/overview.json: what the overview's script
// refreshes the page from.
func (c *console) overviewJSON(r *http.Request) (any, error) {
	return c.overview(r)
}
