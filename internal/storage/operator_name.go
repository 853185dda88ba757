package storage

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
)

// ErrOperatorName is returned for an operator name argo would not store
// and compare as given: one with white space before or after it, or one
// longer than the trail keeps.
var ErrOperatorName = argotype.ErrOperatorName

// checkOperatorName refuses a name no operator action may record: empty
// (ErrNoOperator), with white space at either end, not valid UTF-8, or
// over maxWorkerRunes characters (ErrOperatorName). Names are compared
// byte for byte wherever argo compares them (the second operator of a
// discard request): "Alice" and "alice" are two operators on every
// engine. Outer white space is refused rather than trimmed, since a name
// that differs from its operator's only by it would otherwise count as
// another operator on one engine (SQLite) and as the same on another
// (MySQL's PAD SPACE collations).
func checkOperatorName(who string) error {
	if strings.TrimSpace(who) == "" {
		return ErrNoOperator
	}
	first, _ := utf8.DecodeRuneInString(who)
	last, _ := utf8.DecodeLastRuneInString(who)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return fmt.Errorf("%w: %q has white space before or after it: give the name without it (names are compared byte for byte)", ErrOperatorName, who)
	}
	if err := CheckOperatorText("operator name", who); err != nil {
		return fmt.Errorf("%w: %v", ErrOperatorName, err)
	}
	if n := utf8.RuneCountInString(who); n > maxWorkerRunes {
		return fmt.Errorf("%w: %q is %d characters long; the trail keeps %d: give a shorter name", ErrOperatorName, who, n, maxWorkerRunes)
	}
	return nil
}

// checkOptionalOperatorName is checkOperatorName for an action that may be
// recorded without an operator (Store.Discard): "" passes.
func checkOptionalOperatorName(who string) error {
	if who == "" {
		return nil
	}
	return checkOperatorName(who)
}
