package runtime

import (
	"github.com/argo-retry/argo/argotype"
)

// MaxErrorCode is the most bytes of an error code: 64 (the error_code
// columns, migration 000021).
const MaxErrorCode = argotype.MaxErrorCode

// CodedError is an error with a code, made by Coded (argotype documents
// its fields).
type CodedError = argotype.CodedError

// Coded returns err with an error code (seed 001's error_code, such as
// "PAY_TIMEOUT"): an attempt that returns it, or an error wrapping it,
// records the code on its history row (Attempt.ErrorCode) and on its task
// (Task.ErrorCode, the code of the last failed attempt), where argoctl
// show, argoctl list -code, Filter.ErrorCode, the console and the
// argo_attempt_errors_total metric find it (docs/errors.md).
//
// err's text, errors.Is and errors.As, and its classification (Permanent,
// RetryAfter, Config.IsPermanent) are unchanged: Coded(Permanent(err), c)
// is permanent. A code is 1 to MaxErrorCode (64) characters of
// A-Z a-z 0-9 _ . - : (CheckErrorCode). Any other code is refused whole,
// never cut or altered: the attempt is recorded without a code, and the
// error's text, which is stored, ends with the refusal quoting the code
// (non-ASCII bytes and NUL escaped). Coded(nil, code) is nil. The
// outermost valid code in an error chain wins.
func Coded(err error, code string) error { return argotype.Coded(err, code) }

// ErrorCode returns the code Coded attached to err or to an error it
// wraps (the outermost valid one), and "" if there is none.
func ErrorCode(err error) string { return argotype.ErrorCode(err) }

// CheckErrorCode returns nil for a code Coded accepts, and otherwise an
// error that quotes the code and says what a code may be.
func CheckErrorCode(code string) error { return argotype.CheckErrorCode(code) }

// attemptErrorCode is the code recorded for an attempt that returned err:
// Coded's, else Config.ErrorCode's (a code it returns that CheckErrorCode
// refuses is not recorded: the second result says why, for the error text).
func (rt *Runtime) attemptErrorCode(err error) (string, error) {
	if code := ErrorCode(err); code != "" {
		return code, nil
	}
	if rt.cfg.ErrorCode == nil {
		return "", nil
	}
	code := rt.cfg.ErrorCode(err)
	if code == "" {
		return "", nil
	}
	if cerr := CheckErrorCode(code); cerr != nil {
		return "", cerr
	}
	return code, nil
}

// codedError is the error text msg of an attempt (or fallback) that
// returned err, and its code (attemptErrorCode): a code refused is left
// out and said at the end of the text.
func (rt *Runtime) codedError(err error, msg string) (text, code string) {
	code, codeErr := rt.attemptErrorCode(err)
	if codeErr != nil {
		msg += " [" + codeErr.Error() + " (Config.ErrorCode)]"
	}
	return msg, code
}

// ErrorCodeObserver is an Observer that also counts the codes of failed
// attempts (Coded, Config.ErrorCode). The runtime calls it, after
// AttemptDone, for each failed attempt (not a fallback) whose error has a
// code, when Config.Observer implements it (metrics.Collector does:
// argo_attempt_errors_total); Observer itself is unchanged.
type ErrorCodeObserver interface {
	Observer
	// AttemptErrorCode: an attempt of task failed with code (never "").
	AttemptErrorCode(task, code string)
}
