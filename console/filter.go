package console

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// MaxFilterText is the longest text filter (name, tenant, error, key)
// accepted.
const MaxFilterText = 200

// taskQuery is the task list's filter as the form and the URL carry it.
type taskQuery struct {
	State, Name, Tenant, Error, Key, Since, Until string
	// Code is the error code of the last failed attempt, exactly.
	Code   string
	Before int64
	Limit  int

	states       []runtime.State
	since, until time.Time
}

// filterFields are the names of the filter's inputs, in the form's order.
var filterFields = []string{"state", "name", "tenant", "error", "key", "since", "until", "code"}

// badRequest is a mistake in the request: 400 with its message.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Sprintf(format, args...)}
}

// parseTaskQuery validates the filter in v (a URL's query or a posted form).
func parseTaskQuery(v url.Values, now time.Time, pageSize int) (taskQuery, error) {
	q := taskQuery{
		State: strings.TrimSpace(v.Get("state")), Name: strings.TrimSpace(v.Get("name")),
		Tenant: v.Get("tenant"), Error: v.Get("error"), Key: v.Get("key"),
		Since: strings.TrimSpace(v.Get("since")), Until: strings.TrimSpace(v.Get("until")),
		Code: strings.TrimSpace(v.Get("code")), Limit: pageSize,
	}
	if q.Code != "" {
		if err := runtime.CheckErrorCode(q.Code); err != nil {
			return q, badRequestf("filter code: %s", strings.TrimPrefix(err.Error(), "argo: "))
		}
	}
	for _, f := range []struct{ name, value string }{{"name", q.Name}, {"tenant", q.Tenant}, {"error", q.Error}, {"key", q.Key}} {
		if len(f.value) > MaxFilterText {
			return q, badRequestf("filter %s is %d bytes long: at most %d", f.name, len(f.value), MaxFilterText)
		}
	}
	if q.State != "" {
		for _, name := range strings.Split(q.State, ",") {
			s, err := runtime.ParseState(strings.TrimSpace(name))
			if err != nil {
				return q, badRequestf("filter state: %v; several states are separated by commas (dead,retrying)", err)
			}
			q.states = append(q.states, s)
		}
	}
	var err error
	if q.since, err = parseInstant("since", q.Since, now); err != nil {
		return q, err
	}
	if q.until, err = parseInstant("until", q.Until, now); err != nil {
		return q, err
	}
	if !q.since.IsZero() && !q.until.IsZero() && !q.since.Before(q.until) {
		return q, badRequestf("filter since (%s) must be before until (%s)", q.since.Format(time.RFC3339), q.until.Format(time.RFC3339))
	}
	if b := strings.TrimSpace(v.Get("before")); b != "" {
		q.Before, err = strconv.ParseInt(b, 10, 64)
		if err != nil || q.Before <= 0 {
			return q, badRequestf("before %q: want a task id (a positive whole number; the list shows the tasks older than it)", b)
		}
	}
	if l := strings.TrimSpace(v.Get("limit")); l != "" {
		q.Limit, err = strconv.Atoi(l)
		if err != nil || q.Limit < 1 || q.Limit > MaxPageSize {
			return q, badRequestf("limit %q: want a number of tasks per page from 1 to %d", l, MaxPageSize)
		}
	}
	return q, nil
}

// parseInstant reads a time filter: RFC 3339, the browser's datetime-local
// form (taken as UTC), or a duration back from now ("90m", "2h").
func parseInstant(field, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badRequestf("filter %s %q: want a time (2025-03-01T12:00:00Z, or 2025-03-01T12:00 in UTC) or a duration back from now (90m, 2h)", field, s)
}

// filter is the runtime.Filter the query selects (paging aside).
func (q taskQuery) filter() runtime.Filter {
	return runtime.Filter{
		States: q.states, NameContains: q.Name, Tenant: q.Tenant, ErrorContains: q.Error,
		UniqueKey: q.Key, Since: q.since, Until: q.until, ErrorCode: q.Code,
	}
}

// values is the query as URL parameters (empty ones left out), for links.
func (q taskQuery) values() url.Values {
	v := url.Values{}
	for i, s := range []string{q.State, q.Name, q.Tenant, q.Error, q.Key, q.Since, q.Until, q.Code} {
		if s != "" {
			v.Set(filterFields[i], s)
		}
	}
	return v
}

// empty reports whether the query selects every task.
func (q taskQuery) empty() bool { return len(q.values()) == 0 }
