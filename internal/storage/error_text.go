package storage

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
)

// MaxErrorTextBytes is the most bytes argo stores of one error text
// (argo_task.error_msg and fallback_error_msg, argo_task_attempt.error_msg):
// 16 KiB. A MySQL TEXT column holds 65,535 bytes; 16 KiB leaves room on
// every supported database and keeps a task row small, while holding an
// error message and a Go panic stack of ordinary depth. Longer texts are cut
// with a marker (see SanitizeErrorText).
const MaxErrorTextBytes = argotype.MaxErrorTextBytes

// panicMessageBytes is the share of MaxErrorTextBytes kept of a panic's
// message when the message and its stack do not both fit: the stack (which
// says where the panic happened) gets the rest.
const panicMessageBytes = MaxErrorTextBytes / 4

// SanitizeErrorText makes s storable in an argo TEXT column on every
// database, whatever its bytes and size:
//
//   - each byte that is not part of valid UTF-8 becomes the four characters
//     \xNN (its hex value), so the operator still sees which bytes the error
//     held (MySQL refuses invalid UTF-8 with error 1366; replacing it with
//     U+FFFD would hide it). A backslash already in s is kept as is: the text
//     is for people to read, not to be decoded back.
//   - a NUL byte becomes \x00 on both databases: MySQL stores NUL, but
//     SQLite's text functions (LIKE, LOWER, used by argoctl's filters) and
//     most terminals stop at it.
//   - a text longer than MaxErrorTextBytes (after escaping) is cut on a
//     character boundary, and the marker "…[argo: N bytes cut]" says how
//     many bytes of s were not stored. The head is kept (the message comes
//     first); for a text ending in a Go stack trace (a panic), the message
//     keeps at least panicMessageBytes and the stack as much of its top
//     frames as fits.
//
// A text that is valid UTF-8 without NUL and within the limit is returned
// unchanged.
func SanitizeErrorText(s string) string {
	if len(s) <= MaxErrorTextBytes && utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	if escapedLen(s) <= MaxErrorTextBytes {
		out, _ := escapeText(s, MaxErrorTextBytes)
		return out
	}
	if msg, stack, ok := splitStack(s); ok {
		msgRoom := max(panicMessageBytes, MaxErrorTextBytes-1-escapedLen(stack))
		head := fitText(msg, msgRoom)
		return head + "\n" + fitText(stack, MaxErrorTextBytes-1-len(head))
	}
	return fitText(s, MaxErrorTextBytes)
}

// fitText escapes s as SanitizeErrorText does and, if the result is longer
// than limit bytes, cuts it on a character boundary and appends the cut
// marker, so that the result never exceeds limit bytes.
func fitText(s string, limit int) string {
	if escapedLen(s) <= limit {
		out, _ := escapeText(s, limit)
		return out
	}
	// The marker's number is at most len(s): reserve room for that many digits.
	room := limit - len(cutMarker(len(s)))
	if room < 0 {
		room = 0
	}
	head, used := escapeText(s, room)
	return head + cutMarker(len(s)-used)
}

// cutMarker ends a text of which cut bytes were not stored.
func cutMarker(cut int) string { return "…[argo: " + strconv.Itoa(cut) + " bytes cut]" }

// escapeText escapes s (invalid UTF-8 and NUL bytes as \xNN) up to limit
// output bytes, stopping before the first character or escape that would
// not fit. It returns the escaped text and how many bytes of s it covers.
func escapeText(s string, limit int) (string, int) {
	var b strings.Builder
	b.Grow(min(limit, escapedLen(s)))
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		bad := (r == utf8.RuneError && size == 1) || r == 0
		n := size
		if bad {
			n = 4
		}
		if b.Len()+n > limit {
			break
		}
		if bad {
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), i
}

const hexDigits = "0123456789abcdef"

// escapedLen is the length of s once escaped (without any cut).
func escapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == 0 {
			n += 4
		} else {
			n += size
		}
		i += size
	}
	return n
}

// goroutineHeader starts a Go stack trace, as written by runtime/debug.Stack
// (and so by PanicError): "goroutine 7 [running]:".
var goroutineHeader = regexp.MustCompile(`\ngoroutine \d+ \[[^\]\n]*\]:\n`)

// splitStack splits a text ending in a Go stack trace into the message
// before it and the trace (the last trace header found starts it).
func splitStack(s string) (msg, stack string, ok bool) {
	locs := goroutineHeader.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return "", "", false
	}
	at := locs[len(locs)-1][0]
	return s[:at], s[at+1:], true
}

// CheckOperatorText refuses a text an operator gives (a discard reason) that
// argo could only Store altered: invalid UTF-8, a NUL byte, or more than
// MaxErrorTextBytes. what names the text in the error.
func CheckOperatorText(what, s string) error {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("argo: the %s is not valid UTF-8 (byte 0x%02x at offset %d): write it in UTF-8", what, s[i], i)
		}
		if r == 0 {
			return fmt.Errorf("argo: the %s contains a NUL byte at offset %d: remove it", what, i)
		}
		i += size
	}
	if len(s) > MaxErrorTextBytes {
		return fmt.Errorf("argo: the %s is %d bytes long; the limit is %d (MaxErrorTextBytes): shorten it", what, len(s), MaxErrorTextBytes)
	}
	return nil
}
