package argotype

import "errors"

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the runtime skips the remaining retries and
// goes straight to the fallback (or the dead letter). Use it for errors that
// no retry can fix: validation failures, 4xx answers, refused credentials.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// undecodableError marks stored arguments that no longer decode into the
// function's parameters (the code changed since the task was written).
type undecodableError struct{ err error }

func (e *undecodableError) Error() string { return "arguments do not decode: " + e.err.Error() }
func (e *undecodableError) Unwrap() error { return e.err }

// Undecodable wraps a decoding error from a generated handler. The runtime
// does not count it as an attempt: the task stays visible with the error and
// is tried again later (after a deploy that can decode it), never dropped.
// Undecodable(nil) is nil.
func Undecodable(err error) error {
	if err == nil {
		return nil
	}
	return &undecodableError{err: err}
}

// IsUndecodable reports whether err, or an error it wraps, was made by Undecodable.
func IsUndecodable(err error) bool {
	var u *undecodableError
	return errors.As(err, &u)
}
