package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/testdb"
)

// multiByteError is an error text of two- and three-byte characters, wide
// (CJK, emoji: two columns each) and narrow (Cyrillic, accents), with a
// combining mark and a terminal escape sequence.
const multiByteError = "下游系统返回错误：仓库 A-07 货位灯控制器超时 🚚📦 (Время ожидания истекло, café, e\u0301) " +
	"\x1b[31mred\x1b[0m 重试三次后仍然失败，请检查网络与固件版本，然后重新提交任务。"

// columns is the terminal columns of s, measured independently of
// displayWidth: two for Han, kana, Hangul, fullwidth punctuation and
// pictographs, none for combining marks, one for anything else.
func columns(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul),
			r >= 0x3000 && r <= 0x303F, r >= 0xFF01 && r <= 0xFF60, r >= 0x1F300 && r <= 0x1FAFF:
			n += 2
		default:
			n++
		}
	}
	return n
}

// TestListWidthMultiByte: without -wide every line of list, with wide
// characters in task names and errors and a 19-digit id, is valid UTF-8,
// at most listWidth terminal columns, and its error column starts at the
// same column on every line; the error is cut with "…" and no escape
// byte reaches the terminal. -wide shows the whole error.
func TestListWidthMultiByte(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seedLongNames(t, b.DSN, map[int64]string{
				31:                        examples + "warehouse/integration.仓库.点亮货位指示灯并等待确认",
				32:                        examples + "warehouse/integration.Systems.CallTruckToTheLoadingDock",
				9_000_000_000_000_000_001: examples + "warehouse/integration.Systems.PrintLabel",
			}, multiByteError)
			out := mustCtl(t, b.DSN, "list")
			if !utf8.ValidString(out) {
				t.Fatalf("list printed invalid UTF-8:\n%q", out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			errColumn := columns(lines[0][:strings.Index(lines[0], "ERROR")])
			for _, line := range lines {
				if w := columns(line); w > listWidth {
					t.Errorf("line of %d columns, want at most %d: %q", w, listWidth, line)
				}
				if i := strings.Index(line, "下游"); i >= 0 {
					if at := columns(line[:i]); at != errColumn {
						t.Errorf("error starts at column %d, the ERROR heading at %d: %q", at, errColumn, line)
					}
					if !strings.HasSuffix(line, "…") {
						t.Errorf("long error not cut with …: %q", line)
					}
				}
			}
			if strings.Count(out, "下游") != 3 {
				t.Errorf("list does not show the three errors:\n%s", out)
			}
			wide := mustCtl(t, b.DSN, "list", "-wide")
			if !utf8.ValidString(wide) || strings.Count(wide, "请检查网络与固件版本，然后重新提交任务。\n") != 3 {
				t.Errorf("list -wide does not show each whole error:\n%s", wide)
			}
			if strings.ContainsRune(out+wide, 0x1b) {
				t.Errorf("list printed an escape byte from the error text:\n%q", out+wide)
			}
		})
	}
}

// TestCutToWidth: cutting counts terminal columns (two for a wide
// character, none for a combining mark) and never splits a character.
func TestCutToWidth(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdef", 5, "abcd…"},
		{"仓库货位", 8, "仓库货位"},
		{"仓库货位", 7, "仓库货…"},
		{"仓库货位", 6, "仓库…"}, // 仓库货 and … would take 7
		{"e\u0301e\u0301e\u0301", 3, "e\u0301e\u0301e\u0301"},
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"},
		{"🚚📦🚚", 4, "🚚…"},
	} {
		got := cutToWidth(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) || columns(got) > c.n {
			t.Errorf("cutToWidth(%q, %d) = %q (%d columns), want %q", c.in, c.n, got, columns(got), c.want)
		}
	}
	if got := oneLineText("a\tb\n\x1b[31mc\xff"); got != "a b \uFFFD[31mc\uFFFD" {
		t.Errorf("oneLineText: %q", got)
	}
}
