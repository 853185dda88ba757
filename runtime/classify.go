package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
)

// HTTPStatusError is an HTTP answer with an error status (400 and up), as
// ResponseError makes it; IsTransientError classifies it by Code.
type HTTPStatusError struct {
	Code   int    // the status code, 404
	Status string // the status line's text, "404 Not Found"
	Method string // the request's method and URL, when the response has its request
	URL    string
}

func (e *HTTPStatusError) Error() string {
	if e.URL == "" {
		return "HTTP " + e.Status
	}
	return fmt.Sprintf("%s %s: HTTP %s", e.Method, e.URL, e.Status)
}

// HTTPStatus returns the status code (the interface IsTransientError looks
// for, which other HTTP clients' errors may implement too).
func (e *HTTPStatusError) HTTPStatus() int { return e.Code }

// ResponseError returns nil for a response whose status is below 400, and
// an *HTTPStatusError otherwise; a 429 or 503 with a Retry-After header is
// wrapped by RetryAfter too, so the next attempt waits as the server asked.
// Close the body yourself, as usual.
func ResponseError(resp *http.Response) error {
	if resp == nil || resp.StatusCode < 400 {
		return nil
	}
	e := &HTTPStatusError{Code: resp.StatusCode, Status: resp.Status}
	if e.Status == "" {
		e.Status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.Request != nil && resp.Request.URL != nil {
		e.Method, e.URL = resp.Request.Method, resp.Request.URL.Redacted()
	}
	return RetryAfterResponse(resp, e)
}

// IsTransientError reports whether a retry may fix err (seed 002's
// IsTransientError), for errors of common Go libraries. It is opt-in: argo
// retries every error except runtime.Permanent ones unless
// Config.IsPermanent says otherwise; set Config.IsPermanent to
// IsPermanentError to use it. In this order:
//
//   - nil: false.
//   - runtime.Permanent(err): false.
//   - context.Canceled (the caller gave up; a shutdown's cancellation is
//     handled by argo before any classification): false.
//   - a TLS certificate the client does not trust, a certificate for
//     another host, an invalid certificate, a TLS alert or a non-TLS
//     answer to a TLS handshake: false.
//   - an HTTP status (an error with an HTTPStatus() int method, such as
//     ResponseError's *HTTPStatusError): 408 and 429 true; other 4xx
//     (401 and 403, authentication and authorisation, included) false; 5xx
//     true.
//   - sql.ErrNoRows: false.
//   - timeouts (context.DeadlineExceeded, os.ErrDeadlineExceeded, a
//     net.Error whose Timeout() is true), a refused, reset or aborted
//     connection, a broken pipe, an unexpected EOF, other network errors
//     (*net.OpError, *net.DNSError): true.
//   - anything else, panics included: true, as argo's default.
func IsTransientError(err error) bool {
	if err == nil {
		return false
	}
	if IsPermanent(err) || errors.Is(err, context.Canceled) || tlsFailure(err) || errors.Is(err, sql.ErrNoRows) {
		return false
	}
	var hs interface{ HTTPStatus() int }
	if errors.As(err, &hs) {
		code := hs.HTTPStatus()
		switch {
		case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests:
			return true
		case code >= 400 && code < 500:
			return false
		}
		return true
	}
	return true // timeouts, resets, refusals and unknown errors alike
}

// IsPermanentError is the opposite of IsTransientError for a non-nil err:
// the classifier to give Config.IsPermanent (`Config{IsPermanent:
// runtime.IsPermanentError}`). nil is not permanent.
func IsPermanentError(err error) bool { return err != nil && !IsTransientError(err) }

// tlsFailure reports a TLS handshake failure that a retry does not fix.
func tlsFailure(err error) bool {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		alert      tls.AlertError
		header     tls.RecordHeaderError
		constraint x509.ConstraintViolationError
	)
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &header) || errors.As(err, &constraint)
}
