package gen

import (
	"cmp"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// Error is one user error: a position in the user's source and a message
// that names the directive key or the construct at fault.
type Error struct {
	Pos token.Position
	Msg string
	// Warning marks a near-miss that argogen reports but does not refuse
	// (printed as file:line:col: warning: message).
	Warning bool
}

func (e Error) Error() string { return e.format("") }

// format prints e as file:line:col: message, with the file name relative to
// dir when dir is not empty and that is shorter (as the go command does).
func (e Error) format(dir string) string {
	msg := e.Msg
	if e.Warning {
		msg = "warning: " + msg
	}
	if !e.Pos.IsValid() {
		return msg
	}
	p := e.Pos
	if dir != "" {
		if rel, err := filepath.Rel(dir, p.Filename); err == nil && len(rel) < len(p.Filename) {
			p.Filename = rel
		}
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.Filename, p.Line, p.Column, msg)
}

// ErrorList holds every user error found in one run, sorted by position.
// Generate returns it (as error) when any was found; nothing is written then.
type ErrorList []Error

func (l ErrorList) Error() string { return l.Format("") }

// Format prints one error a line, file names relative to dir (if not empty
// and shorter).
func (l ErrorList) Format(dir string) string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.format(dir))
	}
	return b.String()
}

func (l ErrorList) sort() {
	slices.SortStableFunc(l, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
		)
	})
}

// errs collects user errors and warnings against one file set.
type errs struct {
	fset     *token.FileSet
	list     ErrorList
	warnings ErrorList
}

func (e *errs) at(pos token.Pos, format string, args ...any) {
	e.list = append(e.list, Error{Pos: e.fset.Position(pos), Msg: fmt.Sprintf(format, args...)})
}

// warn records a warning: reported, but it does not make the run fail.
func (e *errs) warn(pos token.Pos, format string, args ...any) {
	e.warnings = append(e.warnings, Error{Pos: e.fset.Position(pos), Msg: fmt.Sprintf(format, args...), Warning: true})
}

// err returns nil when there was no error, else every error and warning
// sorted by position (a failed run reports its warnings with its errors).
func (e *errs) err() error {
	e.warnings.sort()
	if len(e.list) == 0 {
		return nil
	}
	e.list = append(e.list, e.warnings...)
	e.list.sort()
	return e.list
}
