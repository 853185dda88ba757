package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/argo-retry/argo/runtime"
)

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// fmtTime shows t in UTC, RFC 3339 with milliseconds; "-" for none.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

func fmtMillis(m runtime.Millis) string { return fmtTime(m.Time()) }

// jsonTime is fmtTime for JSON: null for none.
func jsonTime(m runtime.Millis) *string {
	if m == 0 {
		return nil
	}
	s := fmtMillis(m)
	return &s
}

func fmtDuration(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDuration(-d)
	}
	return d.Round(time.Millisecond).String()
}

// fmtWindow shows a window without trailing zero units: 1h, 30m, 1h30m.
func fmtWindow(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func fmtPercent(r float64) string { return strconv.FormatFloat(100*r, 'f', 1, 64) + "%" }

// cell makes text fit one table cell: one line (oneLineText), at most n
// terminal columns (cutToWidth).
func cell(s string, n int) string { return cutToWidth(oneLineText(s), n) }

func attempts(t *runtime.Task) string {
	if t.MaxAttempts == 0 {
		return strconv.Itoa(t.ExecuteTimes) + "/∞"
	}
	return strconv.Itoa(t.ExecuteTimes) + "/" + strconv.Itoa(t.MaxAttempts)
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// row writes tab-separated cells and a newline.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	io.WriteString(w, "\n")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// taskJSON is a task as argoctl prints it in JSON: names for codes, times
// in RFC 3339.
type taskJSON struct {
	ID               int64           `json:"id"`
	Task             string          `json:"task"`
	State            string          `json:"state"`
	StateCode        int             `json:"state_code"`
	ExecuteTimes     int             `json:"execute_times"`
	MaxAttempts      int             `json:"max_attempts"`
	Due              *string         `json:"due"`
	Shard            int             `json:"shard"`
	Error            string          `json:"error"`
	ErrorCode        string          `json:"error_code,omitempty"`
	FallbackError    string          `json:"fallback_error,omitempty"`
	DiscardReason    string          `json:"discard_reason,omitempty"`
	Created          *string         `json:"created"`
	Modified         *string         `json:"modified"`
	Method           string          `json:"method,omitempty"`
	Signature        string          `json:"signature,omitempty"`
	ParameterTypes   string          `json:"parameter_types,omitempty"`
	Mode             string          `json:"mode,omitempty"`
	Thread           string          `json:"thread,omitempty"`
	Fallback         string          `json:"fallback,omitempty"`
	Alert            string          `json:"alert,omitempty"`
	AlertAction      string          `json:"alert_action,omitempty"`
	RetryPolicy      json.RawMessage `json:"retry_policy,omitempty"`
	LeaseOwner       string          `json:"lease_owner,omitempty"`
	LeaseUntil       *string         `json:"lease_until,omitempty"`
	UniqueKey        string          `json:"unique_key,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	RawArguments     *string         `json:"raw_arguments,omitempty"`
	Encrypted        *encryptedJSON  `json:"encrypted,omitempty"`
	AttemptHistories []attemptJSON   `json:"attempts,omitempty"`
	Progress         *progressJSON   `json:"progress,omitempty"`
}

func toTaskJSON(t *runtime.Task, full bool) taskJSON {
	j := taskJSON{
		ID: t.ID, Task: t.Name, State: t.State.String(), StateCode: int(t.State),
		ExecuteTimes: t.ExecuteTimes, MaxAttempts: t.MaxAttempts, Due: jsonTime(t.ExecuteTime),
		Shard: t.ShardKey, Error: t.ErrorMsg, ErrorCode: t.ErrorCode, FallbackError: t.FallbackErrorMsg, DiscardReason: t.DiscardReason,
		Created: jsonTime(t.GmtCreate), Modified: jsonTime(t.GmtModified),
		Progress: taskProgressJSON(t),
	}
	if !full {
		return j
	}
	j.Method, j.Signature, j.ParameterTypes = t.MethodName, t.MethodSignName, t.ParameterTypes
	j.Mode, j.Thread = t.PerformanceWay.String(), t.ThreadWay.String()
	j.Fallback, j.Alert, j.AlertAction = t.FallbackClassName, t.AlertExpression, t.AlertActionBeanName
	if json.Valid([]byte(t.RetryPolicyJSON)) {
		j.RetryPolicy = json.RawMessage(t.RetryPolicyJSON)
	}
	j.LeaseOwner, j.LeaseUntil = t.LeaseOwner, jsonTime(t.LeaseUntil)
	j.UniqueKey = t.UniqueKey.String
	if json.Valid([]byte(t.Parameter)) {
		j.Arguments = json.RawMessage(t.Parameter)
	} else {
		j.RawArguments = &t.Parameter
	}
	return j
}

type attemptJSON struct {
	Attempt  int     `json:"attempt"`
	Kind     string  `json:"kind"`
	Outcome  string  `json:"outcome"`
	Started  *string `json:"started"`
	Finished *string `json:"finished"`
	Duration string  `json:"duration"`
	BackoffM int64   `json:"backoff_ms"`
	Worker   string  `json:"worker"`
	Error    string  `json:"error"`
	// ErrorCode is the code the attempt returned (runtime.Coded).
	ErrorCode string `json:"error_code,omitempty"`
	// Progress is the attempt's last report (runtime.ReportProgress).
	Progress *progressJSON `json:"progress,omitempty"`
	// From and To are the move the attempt's finish made, by name
	// ("unrecorded" before migration 000024); TraceID the trace id of the
	// span it ran in.
	From    string `json:"from"`
	To      string `json:"to"`
	TraceID string `json:"trace_id,omitempty"`
}

func toAttemptJSON(a runtime.Attempt) attemptJSON {
	return attemptJSON{
		Attempt: a.Attempt, Kind: a.Kind, Outcome: a.Outcome, Started: jsonTime(a.StartedAt), Finished: jsonTime(a.FinishedAt),
		Duration: fmtDuration(a.FinishedAt.Time().Sub(a.StartedAt.Time())), BackoffM: a.BackoffMs, Worker: a.Worker, Error: a.Error, ErrorCode: a.ErrorCode,
		Progress: attemptProgressJSON(a),
		From:     stateName(a.From), To: stateName(a.To), TraceID: a.TraceID,
	}
}
