package argotype

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxErrorCode is the most bytes of an error code (runtime.Coded): 64, the
// size of the error_code columns (migration 000021).
const MaxErrorCode = 64

// CheckErrorCode returns nil for a valid error code: 1 to MaxErrorCode
// bytes, each an ASCII letter, digit, '_', '.', '-' or ':' ("PAY_TIMEOUT",
// "http.503", "db:deadlock"). Any other code is refused whole, never cut
// or altered: the error says what it held (quoted, bytes escaped) and
// what a code may be.
func CheckErrorCode(code string) error {
	bad := len(code) == 0 || len(code) > MaxErrorCode
	for i := 0; i < len(code) && !bad; i++ {
		bad = !errorCodeByte(code[i])
	}
	if !bad {
		return nil
	}
	shown := code
	if len(shown) > 2*MaxErrorCode {
		shown = shown[:2*MaxErrorCode] + "…"
	}
	return fmt.Errorf("argo: error code %s (%d bytes) refused: a code is 1 to %d characters of A-Z a-z 0-9 _ . - : (runtime.Coded)", strconv.QuoteToASCII(shown), len(code), MaxErrorCode)
}

func errorCodeByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == ':'
}

// CodedError is an error with a code (seed 001's error_code), made by
// Coded. Its text is Err's; a code Coded refused leaves Code empty and
// Refused saying why, which the text then ends with.
type CodedError struct {
	Err     error
	Code    string
	Refused error // CheckErrorCode's error for a code Coded refused
}

func (e *CodedError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Refused != nil {
		return msg + " [" + e.Refused.Error() + "]"
	}
	return msg
}

func (e *CodedError) Unwrap() error { return e.Err }

// Coded returns err with code attached: an attempt that returns it (or an
// error wrapping it) records code on its history row and on its task
// (argo_task_attempt.error_code, argo_task.error_code). err's text, its
// classification (Permanent, RetryAfter) and errors.Is/As are unchanged.
// A code CheckErrorCode refuses is not stored (the attempt has no code)
// and the error's text ends with the refusal, which is stored with it.
// Coded(nil, code) is nil.
func Coded(err error, code string) error {
	if err == nil {
		return nil
	}
	if cerr := CheckErrorCode(code); cerr != nil {
		return &CodedError{Err: err, Refused: cerr}
	}
	return &CodedError{Err: err, Code: code}
}

// ErrorCode returns the code of the outermost CodedError in err's chain
// that holds a valid one, and "" if none does.
func ErrorCode(err error) string {
	for err != nil {
		var ce *CodedError
		if !errors.As(err, &ce) {
			return ""
		}
		if ce.Code != "" {
			return ce.Code
		}
		err = ce.Err
	}
	return ""
}

// RefusedTransition is the count of one kind of refused operator change
// (argo_refused_transition, migration 000021): where it came from
// (Inspector.Source: argoctl, console, api, other), the task's state and
// the state asked for (state names), and how many times.
type RefusedTransition struct {
	Source  string `db:"source" json:"source"`
	From    string `db:"from_state" json:"from"` // a state's name, "retrying"
	To      string `db:"to_state" json:"to"`
	Refused int64  `db:"refused" json:"refused"`
}
