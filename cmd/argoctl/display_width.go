package main

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// runeWidth is the number of terminal columns r takes (go-runewidth's East
// Asian Width tables: 2 for a wide character, 0 for a combining mark or a
// zero-width format character, 1 for any other).
func runeWidth(r rune) int { return runewidth.RuneWidth(r) }

// displayWidth is the number of terminal columns s takes.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// oneLineText makes text printable on one table line: runs of white space
// become one space, invalid UTF-8 and control characters (an escape
// sequence in an error text could drive the terminal) become U+FFFD; "-"
// for no text.
func oneLineText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// cutToWidth cuts s to at most n terminal columns (n ≥ 1), on a character
// boundary, ending it with "…" when anything was cut.
func cutToWidth(s string, n int) string {
	if displayWidth(s) <= n {
		return s
	}
	used := 0
	for i, r := range s {
		w := runeWidth(r)
		if used+w > n-1 { // room for the "…"
			return s[:i] + "…"
		}
		used += w
	}
	return s
}

// writeAligned writes rows as a table: every column but the last padded
// with spaces to its widest cell in terminal columns (displayWidth) plus a
// gap of two, the last column as it is. text/tabwriter counts runes, which
// misaligns wide characters.
func writeAligned(w io.Writer, rows [][]string) {
	const gap = 2
	var widths []int
	for _, r := range rows {
		for col, c := range r[:max(len(r)-1, 0)] {
			if col == len(widths) {
				widths = append(widths, 0)
			}
			widths[col] = max(widths[col], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for col, c := range r {
			b.WriteString(c)
			if col < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[col]-displayWidth(c)+gap))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
}
