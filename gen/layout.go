package gen

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"
)

// The generated file keeps every line within maxColumns, counting a tab as
// tabWidth columns (gofmt's): a list that would make its line longer (the
// parameters of a wrapper, the arguments of a call, the fields of a
// literal) is written one item a line, and a long string literal is split
// into a sum of shorter ones. TestGeneratedLineLength checks every
// generated file and golden of the repository.
const (
	maxColumns = 120
	tabWidth   = 8
)

// columns is the width of line with tabs expanded to tabWidth.
func columns(line string) int {
	n := 0
	for _, r := range line {
		if r == '\t' {
			n += tabWidth - n%tabWidth
			continue
		}
		n++
	}
	return n
}

// fits reports whether code, rendered after indent columns, keeps its first
// line within maxColumns. It renders with the file's imports, so qualified
// names are measured as the file spells them.
func (e *emitter) fits(indent int, code jen.Code) bool {
	var b bytes.Buffer
	if err := jen.Add(code).RenderWithFile(&b, e.f); err != nil {
		return false // cannot measure: take the multi-line form
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	return indent+columns(first) <= maxColumns
}

// list renders items between open and close, separated by commas: on one
// line, or one item a line (a trailing comma after each) when multi.
func list(open, close string, multi bool, items ...jen.Code) *jen.Statement {
	if len(items) == 0 {
		multi = false
	}
	return jen.Custom(jen.Options{Open: open, Close: close, Separator: ",", Multi: multi}, items...)
}

// fit returns build(false) when its first line fits after indent columns,
// else build(true).
func (e *emitter) fit(indent int, build func(multi bool) jen.Code) jen.Code {
	if one := build(false); e.fits(indent, one) {
		return one
	}
	return build(true)
}

// lit renders the string s as a literal that fits after indent columns: one
// literal, or a sum of literals split after spaces or commas (or, with none near,
// at a character), one a line.
func lit(indent int, s string) jen.Code {
	if indent+len(strconv.Quote(s))+2 <= maxColumns {
		return jen.Lit(s)
	}
	const width = 80 // of each part's quoted text
	var parts []string
	for s != "" {
		cut := len(s)
		if len(strconv.Quote(s)) > width {
			cut = 0
			for i, r := range s {
				if i > 0 && len(strconv.Quote(s[:i])) > width {
					break
				}
				if (r == ' ' || r == ',') && i > 0 {
					cut = i + 1
				}
			}
			if cut == 0 { // no space: cut at the last character that fits
				for i := range s {
					if i > 0 && len(strconv.Quote(s[:i])) > width {
						break
					}
					cut = i
				}
			}
			if cut == 0 {
				_, cut = utf8.DecodeRuneInString(s)
			}
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	var out jen.Statement
	for i, p := range parts {
		if i > 0 {
			out.Op("+").Line()
		}
		out.Lit(p)
	}
	return &out
}
