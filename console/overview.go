package console

import "net/http"

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
	return readOverview(r.Context(), c.inspector(r), c.opts.Now(), c.opts.Window, c.opts.Bucket, c.opts.CountCap)
}

// overviewJSON is GET ./api/overview.json: what the overview's script
// refreshes the page from.
func (c *console) overviewJSON(r *http.Request) (any, error) {
	return c.overview(r)
}
