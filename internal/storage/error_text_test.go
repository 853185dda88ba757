package storage

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"
)

// poisonTexts are error texts MySQL in strict mode refuses as they are
// (1406 data too long, 1366 incorrect string value) or that SQLite's text
// functions mishandle (NUL), each with the escaped head it must be stored with.
var poisonTexts = []struct {
	name, text, storedHead string
}{
	{"100KiB", strings.Repeat("x", 100<<10), strings.Repeat("x", 1000)},
	{"invalid UTF-8 ff fe", "bad \xff\xfe bytes", `bad \xff\xfe bytes`},
	{"lone c3", "cut \xc3", `cut \xc3`},
	{"bf 27", "quote \xbf' DROP TABLE x; --", `quote \xbf' DROP TABLE x; --`},
	{"NUL", "nul \x00 inside", `nul \x00 inside`},
	{"100KiB invalid", "héad " + strings.Repeat("\xff", 100<<10), `héad \xff\xff`},
}

func TestSanitizeErrorText(t *testing.T) {
	t.Run("unchanged when storable", func(t *testing.T) {
		for _, s := range []string{"", "plain", "héllo € 😀 \ufffd kept", strings.Repeat("y", MaxErrorTextBytes)} {
			if got := SanitizeErrorText(s); got != s {
				t.Fatalf("%q changed to %q", s[:min(len(s), 40)], got[:min(len(got), 40)])
			}
		}
	})
	t.Run("escapes", func(t *testing.T) {
		for _, p := range poisonTexts[1:5] {
			if got := SanitizeErrorText(p.text); got != p.storedHead {
				t.Fatalf("%s: %q, want %q", p.name, got, p.storedHead)
			}
		}
	})
	t.Run("exact limit", func(t *testing.T) {
		over := strings.Repeat("z", MaxErrorTextBytes+1)
		got := SanitizeErrorText(over)
		if len(got) > MaxErrorTextBytes || !strings.HasSuffix(got, "bytes cut]") {
			t.Fatalf("%d bytes, ends %q", len(got), got[len(got)-30:])
		}
		checkCut(t, over, got)
		// An escape that would end past the limit is left out whole.
		edge := strings.Repeat("a", MaxErrorTextBytes-3) + "\xff"
		got = SanitizeErrorText(edge)
		checkCut(t, edge, got)
		if strings.Contains(got, `\x`) && !strings.Contains(got, `\xff`) {
			t.Fatalf("escape split: %q", got[len(got)-40:])
		}
	})
	t.Run("rune boundaries", func(t *testing.T) {
		for _, r := range []string{"é", "€", "😀", "\xff"} {
			for shift := range 4 {
				s := strings.Repeat("a", shift) + strings.Repeat(r, MaxErrorTextBytes)
				got := SanitizeErrorText(s)
				if !utf8.ValidString(got) || len(got) > MaxErrorTextBytes {
					t.Fatalf("%q shift %d: %d bytes, valid %v", r, shift, len(got), utf8.ValidString(got))
				}
				if len(got) < MaxErrorTextBytes-8 { // at most one character's room is lost
					t.Fatalf("%q shift %d: only %d of %d bytes used", r, shift, len(got), MaxErrorTextBytes)
				}
				checkCut(t, s, got)
			}
		}
	})
	t.Run("panic keeps message head and stack", func(t *testing.T) {
		stack := string(debug.Stack())
		for _, value := range []string{strings.Repeat("v", 100<<10), "short value"} {
			text := fmt.Sprintf("panic: %v\n%s", value+"\xff", stack+strings.Repeat("\tframe\n", 5000)) // as runtime.PanicError writes it
			got := SanitizeErrorText(text)
			if !utf8.ValidString(got) || len(got) > MaxErrorTextBytes {
				t.Fatalf("%d bytes, valid %v", len(got), utf8.ValidString(got))
			}
			if !strings.HasPrefix(got, "panic: "+value[:min(len(value), 1000)]) {
				t.Fatalf("message head lost: %q", got[:80])
			}
			// The top frames (this test) are kept after the message.
			if !strings.Contains(got, "\ngoroutine ") || !strings.Contains(got, "TestSanitizeErrorText") {
				t.Fatalf("stack lost: %q", got[max(0, len(got)-200):])
			}
			if !strings.HasSuffix(got, "bytes cut]") {
				t.Fatalf("no cut marker at the end: %q", got[len(got)-40:])
			}
		}
	})
	t.Run("operator text", func(t *testing.T) {
		if err := CheckOperatorText("discard reason", "ok, é"); err != nil {
			t.Fatal(err)
		}
		for in, want := range map[string]string{
			"a\xffb":                                 "not valid UTF-8 (byte 0xff at offset 1)",
			"a\x00b":                                 "NUL byte at offset 1",
			strings.Repeat("r", MaxErrorTextBytes+1): "the limit is 16384",
		} {
			if err := CheckOperatorText("discard reason", in); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%q: %v, want %q", in[:min(len(in), 10)], err, want)
			}
		}
	})
	t.Run("replacement text fits 255 bytes", func(t *testing.T) {
		got := RefusedText(errors.New(strings.Repeat("é", 1000)))
		if len(got) > 255 || !strings.HasPrefix(got, "argo: error text refused by the database (") {
			t.Fatalf("%d bytes: %q", len(got), got)
		}
	})
}

// checkCut checks that a cut text is a head of in's escaped form plus a
// marker counting exactly the bytes of in not stored.
func checkCut(t *testing.T, in, got string) {
	t.Helper()
	i := strings.LastIndex(got, "…[argo: ")
	if i < 0 {
		t.Fatalf("no marker in %q", got[max(0, len(got)-40):])
	}
	var cut int
	if _, err := fmt.Sscanf(got[i:], "…[argo: %d bytes cut]", &cut); err != nil {
		t.Fatalf("marker %q: %v", got[i:], err)
	}
	head, covered := escapeText(in, i)
	if head != got[:i] || covered+cut != len(in) {
		t.Fatalf("head of %d bytes covers %d of %d input bytes; marker says %d cut", i, covered, len(in), cut)
	}
}
