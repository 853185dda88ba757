package main

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// wideRanges are the runes a terminal shows two columns wide: the East Asian
// Wide and Fullwidth characters of Unicode (Hangul, CJK ideographs and
// punctuation, kana, fullwidth forms) and the emoji shown as pictures.
var wideRanges = []struct{ lo, hi rune }{
	{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0},
	{0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F},
	{0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5},
	{0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
	{0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728},
	{0x274C, 0x274C}, {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
	{0x27B0, 0x27B0}, {0x27BF, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55},
	{0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF},
	{0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE10, 0xFE19}, {0xFE30, 0xFE6F},
	{0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x16FE0, 0x16FE4}, {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF},
	{0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F2FF},
	{0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB}, {0x1F900, 0x1F9FF}, {0x1FA70, 0x1FAFF},
	{0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
}

// runeWidth is the number of terminal columns r takes: 0 for a combining
// mark or an invisible format character (a zero-width joiner, a variation
// selector), 2 for a wide character (wideRanges), 1 for any other.
func runeWidth(r rune) int {
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf) {
		return 0
	}
	for _, w := range wideRanges {
		if r < w.lo {
			return 1
		}
		if r <= w.hi {
			return 2
		}
	}
	return 1
}

// displayWidth is the number of terminal columns s takes (runeWidth of
// each of its runes).
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
