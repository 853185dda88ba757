package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"github.com/argo-retry/argo/runtime"
)

// taskListView is the data of the tasks page.
type taskListView struct {
	Query      taskQuery
	StateNames []string
	Tasks      []*runtime.Task
	Count      int
	CountMore  bool
	// NextBefore is the id the next page starts below (0: no next page).
	NextBefore      int64
	NextQuery       template.URL
	FilterQuery     template.URL
	Hidden          []hiddenField
	BulkCap         int
	RequireApproval bool
}

// hiddenField is a form's hidden input carrying a filter field.
type hiddenField struct{ Name, Value string }

// hiddenFields are q's criteria as hidden inputs.
func hiddenFields(q taskQuery) []hiddenField {
	var out []hiddenField
	v := q.values()
	for _, name := range filterFields {
		if s := v.Get(name); s != "" {
			out = append(out, hiddenField{name, s})
		}
	}
	return out
}

// taskListPage is GET ./tasks: the filter form, one page of tasks (keyset
// paging by before=ID), their bounded count, and the bulk actions.
func (c *console) taskListPage(w http.ResponseWriter, r *http.Request) error {
	q, err := parseTaskQuery(r.URL.Query(), c.opts.Now(), c.opts.PageSize)
	if err != nil {
		return err
	}
	ctx := r.Context()
	in := c.inspector(r)
	f := q.filter()
	tasks, err := listPage(ctx, in, f, q.Before, q.Limit+1)
	if err != nil {
		return err
	}
	n, more, err := countUpTo(ctx, in, f, c.opts.CountCap)
	if err != nil {
		return err
	}
	v := &taskListView{Query: q, BulkCap: c.opts.BulkCap, RequireApproval: !c.opts.SingleOperatorDiscard,
		Count: n, CountMore: more, Hidden: hiddenFields(q), FilterQuery: template.URL(q.values().Encode())}
	for _, s := range runtime.AllStates {
		v.StateNames = append(v.StateNames, s.String())
	}
	if len(tasks) > q.Limit {
		tasks = tasks[:q.Limit]
		v.NextBefore = tasks[len(tasks)-1].ID
		next := q.values()
		next.Set("before", strconv.FormatInt(v.NextBefore, 10))
		if q.Limit != c.opts.PageSize {
			next.Set("limit", strconv.Itoa(q.Limit))
		}
		v.NextQuery = template.URL(next.Encode())
	}
	v.Tasks = tasks
	render(w, http.StatusOK, "tasks.html", c.newPage(r, "Tasks", v))
	return nil
}

// listQuery is q as the query of a link back to the list.
func listQuery(q taskQuery) template.URL {
	return template.URL(url.Values(q.values()).Encode())
}
