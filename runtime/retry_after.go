package runtime

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a RetryAfter error asks for: a longer one
// (a callee asking for a day, a clock far off in an HTTP date) waits
// MaxRetryAfter.
const MaxRetryAfter = time.Hour

// RetryAfterError is a failed attempt whose callee said when to try again
// (an HTTP 429 or 503 with Retry-After, a quota reset time). The task is
// retried after After (capped at MaxRetryAfter), in place of its backoff,
// and the attempt is not counted against the retry policy's attempts: the
// callee refused the call, it did not fail it. It is still an attempt: it
// keeps its number and idempotency key (the next attempt has the next
// ones) and is recorded with outcome OutcomeDeferred; Task.DeferredTimes
// counts such attempts. It counts as a failure for the group's circuit
// breaker, and the next attempt is a retry for its retry budget.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s (deferred: not counted against the retry policy): %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err: the task runs again after d (at most
// MaxRetryAfter; a negative d is 0), without using up one of its retry
// policy's attempts (RetryAfterError). A nil err stays nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{After: min(max(d, 0), MaxRetryAfter), Err: err}
}

// retryAfterOf returns the wait an attempt's error asks for, capped.
func retryAfterOf(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if !errors.As(err, &ra) {
		return 0, false
	}
	return min(max(ra.After, 0), MaxRetryAfter), true
}

// RetryAfterResponse turns an HTTP answer into the attempt's error: a 429
// (Too Many Requests) or 503 (Service Unavailable) with a Retry-After
// header becomes RetryAfter(err, the header's wait), and err is an error
// naming the status if nil; any other answer returns err as it is. Call it
// with the response and error of the request, before closing the body:
//
//	resp, err := client.Do(req)
//	if resp != nil { defer resp.Body.Close() }
//	if err := runtime.RetryAfterResponse(resp, err); err != nil { return err }
func RetryAfterResponse(resp *http.Response, err error) error {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return err
	}
	if err == nil {
		err = fmt.Errorf("HTTP %s", resp.Status)
	}
	d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if !ok {
		return err
	}
	return RetryAfter(err, d)
}

// ParseRetryAfter reads an HTTP Retry-After value, seconds ("120") or an
// HTTP date, as the wait from now (0 for a date past); ok is false for an
// empty or unreadable value.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}
