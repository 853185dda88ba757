package storage_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
)

// placeholderNs are the row counts the statement builders (the Statements
// fields that are functions of n) are called with.
var placeholderNs = []int{1, 2, 5}

// samplePart is what a builder's string parameter (a SET list, a
// Filter's condition, a scope, a state set, a page) is given: text without
// a placeholder, so that only the driver's own are counted.
const samplePart = "1 = 1"

// TestStatementPlaceholdersAgree fails when the drivers' statements do not
// take the arguments the Store passes: for every field of
// storage.Statements (the builders called with placeholderNs rows and
// samplePart parts), the '?' outside quotes and comments must be as many
// in every driver, and as many as the field's doc comment in statements.go
// lists (docArgs), and as the helpers that build the arguments return
// (InsertArgs, AttemptArgs, FinishStatement, DependencySteps, FlowWrite's,
// mysqldriver's TakeAllArgs). A numbered placeholder ("?1") fails too:
// every statement's arguments are positional.
func TestStatementPlaceholdersAgree(t *testing.T) {
	stated := docArgs(t)
	drivers := map[string]*storage.Statements{}
	for _, dialect := range storage.Dialects() {
		st, err := storage.StatementsFor(dialect)
		if err != nil {
			t.Fatal(err)
		}
		drivers[dialect] = st
	}
	if len(drivers) < 2 {
		t.Fatalf("%d drivers registered, want mysql and sqlite", len(drivers))
	}
	typ := reflect.TypeOf(storage.Statements{})
	checked := 0
	for i := range typ.NumField() {
		field := typ.Field(i)
		for _, c := range statementCases(field) {
			counts := map[string]int{}
			for dialect, st := range drivers {
				n, err := c.count(reflect.ValueOf(st).Elem().Field(i))
				if err != nil {
					t.Errorf("%s: %s: %v", dialect, c.name, err)
					continue
				}
				counts[dialect] = n
			}
			if !allEqual(counts) {
				t.Errorf("%s: the drivers disagree on the placeholders: %v", c.name, counts)
			}
			want, ok := stated[field.Name]
			if !ok {
				t.Errorf("%s: no argument count from its doc comment: %v", c.name, c.why)
				continue
			}
			w, err := want(c.n, stated)
			if err != nil {
				t.Errorf("%s: doc comment: %v", c.name, err)
				continue
			}
			for dialect, n := range counts {
				if n != w {
					t.Errorf("%s: %s has %d placeholders, its doc comment lists %d arguments", c.name, dialect, n, w)
				}
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d statements: fewer than storage.Statements holds (is the test reading its fields?)", checked)
	}
	for dialect, st := range drivers {
		checkHelperArgs(t, dialect, st)
	}
	for _, n := range placeholderNs {
		tasks := make([]*storage.Task, n)
		for i := range tasks {
			tasks[i] = &storage.Task{ID: int64(i + 1)}
		}
		if got, want := placeholders(t, mysqldriver.ClaimTakeAll(n)), len(mysqldriver.TakeAllArgs("me", 1, 1, 1, tasks)); got != want {
			t.Errorf("mysql: ClaimTakeAll(%d) has %d placeholders, TakeAllArgs returns %d arguments", n, got, want)
		}
	}
}

// statementCase is one statement of a field: a string, one element of a
// slice, or a builder called with one n.
type statementCase struct {
	name  string
	n     int // the builder's n (0: none)
	why   string
	count func(v reflect.Value) (int, error)
}

func statementCases(field reflect.StructField) []statementCase {
	switch field.Type.Kind() {
	case reflect.String:
		return []statementCase{{name: field.Name, count: func(v reflect.Value) (int, error) { return countPlaceholders(v.String()) }}}
	case reflect.Slice: // SchemaProbes: no arguments
		return []statementCase{{name: field.Name, count: func(v reflect.Value) (int, error) {
			total := 0
			for i := range v.Len() {
				n, err := countPlaceholders(fmt.Sprint(v.Index(i).FieldByName("Query").Interface()))
				if err != nil {
					return 0, fmt.Errorf("probe %d: %w", i, err)
				}
				total += n
			}
			return total, nil
		}}}
	case reflect.Func:
		ft := field.Type
		hasN := false
		for i := range ft.NumIn() {
			hasN = hasN || ft.In(i).Kind() == reflect.Int
		}
		ns := []int{0}
		if hasN {
			ns = placeholderNs
		}
		var out []statementCase
		for _, n := range ns {
			name := field.Name + "(" + builderArgs(ft, n) + ")"
			out = append(out, statementCase{name: name, n: n, count: func(v reflect.Value) (int, error) {
				in := make([]reflect.Value, ft.NumIn())
				for i := range in {
					switch ft.In(i).Kind() {
					case reflect.Int:
						in[i] = reflect.ValueOf(n)
					case reflect.String:
						in[i] = reflect.ValueOf(samplePart)
					default:
						return 0, fmt.Errorf("parameter %d of kind %s: extend this test", i, ft.In(i).Kind())
					}
				}
				return countPlaceholders(v.Call(in)[0].String())
			}})
		}
		return out
	}
	return []statementCase{{name: field.Name, count: func(reflect.Value) (int, error) {
		return 0, fmt.Errorf("kind %s not checked: extend this test", field.Type.Kind())
	}}}
}

func builderArgs(ft reflect.Type, n int) string {
	var parts []string
	for i := range ft.NumIn() {
		if ft.In(i).Kind() == reflect.Int {
			parts = append(parts, fmt.Sprint(n))
		} else {
			parts = append(parts, fmt.Sprintf("%q", samplePart))
		}
	}
	return strings.Join(parts, ", ")
}

func allEqual(m map[string]int) bool {
	first, seen := 0, false
	for _, v := range m {
		if seen && v != first {
			return false
		}
		first, seen = v, true
	}
	return true
}

// countPlaceholders counts the '?' of q outside quoted strings and
// identifiers ('…', "…", `…`, with doubled or backslash-escaped quotes)
// and comments (-- to the end of the line, /* … */); a numbered one
// ("?1") is an error.
func countPlaceholders(q string) (int, error) {
	n := 0
	for i := 0; i < len(q); i++ {
		switch ch := q[i]; {
		case ch == '\'' || ch == '"' || ch == '`':
			for i++; i < len(q); i++ {
				if q[i] == '\\' && ch != '`' {
					i++
				} else if q[i] == ch {
					if i+1 < len(q) && q[i+1] == ch {
						i++
						continue
					}
					break
				}
			}
		case ch == '-' && strings.HasPrefix(q[i:], "--"):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case ch == '/' && strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return 0, fmt.Errorf("unclosed comment in %q", q)
			}
			i += 2 + end + 1
		case ch == '?':
			if i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
				return 0, fmt.Errorf("numbered placeholder %q: the Store passes arguments by position", q[i:min(len(q), i+4)])
			}
			n++
		}
	}
	return n, nil
}

func placeholders(t *testing.T, q string) int {
	t.Helper()
	n, err := countPlaceholders(q)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCountPlaceholders(t *testing.T) {
	for q, want := range map[string]int{
		"SELECT a FROM t WHERE b = ? AND c IN (?, ?)":             3,
		"SELECT '?', \"?\", `?` FROM t WHERE a = ?":               1,
		"SELECT 'it''s ?', 'a\\'?' FROM t WHERE a = ? -- b = ?\n": 1,
		"SELECT /* ? */ a FROM t WHERE a LIKE ? ESCAPE '!'":       1,
		"INSERT INTO t (a, b) VALUES (?, ?), (?, ?)":              4,
		"UPDATE t SET a = ? WHERE b = ?; UPDATE t SET c = ? -- ?": 3,
	} {
		if got := placeholders(t, q); got != want {
			t.Errorf("countPlaceholders(%q) = %d, want %d", q, got, want)
		}
	}
	if _, err := countPlaceholders("SELECT ?1"); err == nil {
		t.Error("a numbered placeholder was counted")
	}
}

// checkHelperArgs compares the helpers that build a statement's arguments
// with the statement's placeholders.
func checkHelperArgs(t *testing.T, dialect string, st *storage.Statements) {
	t.Helper()
	check := func(what, q string, args int) {
		t.Helper()
		if got := placeholders(t, q); got != args {
			t.Errorf("%s: %s has %d placeholders, its arguments are %d", dialect, what, got, args)
		}
	}
	check("InsertTask", st.InsertTask, len(storage.InsertArgs(&storage.Task{}))+1) // then the submit token
	for _, n := range placeholderNs {
		check(fmt.Sprintf("InsertAttempts(%d)", n), st.InsertAttempts(n), n*len(storage.AttemptArgs(&storage.Attempt{})))
	}
	check("FlowWrite", st.FlowWrite, len(storage.FlowWriteArgs(&storage.FlowState{})))
	msg := "failed"
	for i, f := range []storage.Finishing{
		{To: storage.StateSucceeded},
		{To: storage.StateRetrying, HoldUntil: 1},
		{To: storage.StateRetrying, ErrMsg: &msg, History: &storage.Attempt{Kind: "attempt"}},
		{To: storage.StateExhausted, ErrMsg: &msg, FallbackErr: &msg, UndoAttempt: true, Deferred: true, History: &storage.Attempt{Kind: "fallback"}},
	} {
		q, args := storage.FinishStatement(st, f, 1)
		check(fmt.Sprintf("FinishStatement (case %d)", i), q, len(args))
	}
	for _, to := range []storage.State{argotype.StateSucceeded, argotype.StateDead, argotype.StateDiscarded, argotype.StateSkipped, argotype.StateRecovered} {
		for _, step := range storage.DependencySteps(st, 1, to, 1) {
			check(fmt.Sprintf("DependencySteps(%s)", to), step.Query, len(step.Args))
		}
	}
}

// docArg is a field's argument count as its doc comment lists it, for a
// builder's n; stated holds the other fields' (for "FlowCandidates's").
type docArg func(n int, stated map[string]docArg) (int, error)

// argsClause finds the list of arguments in a doc comment: after
// ": arguments", ": argument", or a list given per row ("per row",
// "per edge") or as "the n ids/names", up to the end of the sentence.
var argsClause = regexp.MustCompile(`: (arguments? |per (?:row|edge) |the n (?:ids|names))([^.;]*)`)

// groupOf matches "n (a, b) pairs": n groups of the named columns.
var groupOf = regexp.MustCompile(`^n \(([^)]*)\) (?:pairs|triples)$`)

// docArgs reads the doc comments of storage.Statements (statements.go) and
// returns, per field, how many arguments its comment lists. A comment
// that lists none means none (DatabaseTime, CountByState, ...); "X is Y
// ..." without a list of its own means Y's; a field without a comment
// shares the one above it when that names it ("ListTasks, CountTasks and
// TaskIDs ...").
func docArgs(t *testing.T) map[string]docArg {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "statements.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]docArg{}
	var fields *ast.FieldList
	ast.Inspect(f, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Statements" {
			fields = ts.Type.(*ast.StructType).Fields
		}
		return fields == nil
	})
	if fields == nil {
		t.Fatal("statements.go: no type Statements")
	}
	prevDoc := ""
	for _, fld := range fields.List {
		doc := strings.Join(strings.Fields(fld.Doc.Text()), " ")
		for _, name := range fld.Names {
			d := doc
			if d == "" && strings.Contains(prevDoc, name.Name) {
				d = prevDoc
			}
			out[name.Name] = parseDocArgs(name.Name, d)
		}
		if doc != "" {
			prevDoc = doc
		}
	}
	return out
}

// parseDocArgs turns the argument list of field's doc comment into a
// count.
func parseDocArgs(field, doc string) docArg {
	// The comment about this field: where it shares a paragraph with a
	// heading ("The console's reads (...). CountTasksUpTo ..."), from its
	// name on.
	if i := strings.Index(doc, field+" "); i > 0 {
		doc = doc[i:]
	}
	m := argsClause.FindStringSubmatch(stripNotes(doc))
	if m == nil {
		if strings.Contains(doc, "; no arguments") {
			return func(int, map[string]docArg) (int, error) { return 0, nil }
		}
		if other := regexp.MustCompile(`^\w+ is (\w+) `).FindStringSubmatch(doc); other != nil {
			return func(n int, stated map[string]docArg) (int, error) {
				o, ok := stated[other[1]]
				if !ok {
					return 0, fmt.Errorf("names %s, not a field", other[1])
				}
				return o(n, stated)
			}
		}
		return func(int, map[string]docArg) (int, error) { return 0, nil }
	}
	head, list := m[1], m[2]
	var items []string
	switch {
	case strings.HasPrefix(head, "the n "):
		items = append(items, "the n ")
		list = strings.TrimPrefix(list, ",")
	case strings.HasPrefix(head, "per "):
		cols := splitArgs(list)
		return func(n int, _ map[string]docArg) (int, error) { return n * len(cols), nil }
	}
	items = append(items, splitArgs(list)...)
	return func(n int, stated map[string]docArg) (int, error) {
		total, last := 0, 0
		for _, it := range items {
			k, err := itemArgs(it, n, stated)
			if err != nil {
				return 0, err
			}
			if it == "twice" {
				k = last
			}
			total += k
			last = k
		}
		return total, nil
	}
}

// stripNotes removes parenthesised notes (" (the claim's SET)"), keeping
// the groups of "n (a, b) pairs".
func stripNotes(s string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(' && depth == 0 && i > 0 && s[i-1] == ' ' && !(i >= 2 && s[i-2] == 'n' && (i < 3 || s[i-3] == ' ')):
			depth = 1
			bs := b.String() // drop the space before the note
			b.Reset()
			b.WriteString(strings.TrimSuffix(bs, " "))
		case depth > 0 && s[i] == '(':
			depth++
		case depth > 0 && s[i] == ')':
			depth--
		case depth == 0:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// splitArgs splits "a, b, then c: d, e" into a, b, d, e (a label before a
// colon names the part that follows); commas inside a group's parentheses
// do not split.
func splitArgs(list string) []string {
	var out []string
	depth, start := 0, 0
	add := func(s string) {
		s = strings.TrimSpace(s)
		s = strings.TrimPrefix(s, "then ")
		if _, after, ok := strings.Cut(s, ": "); ok {
			s = after
		}
		if s != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				add(list[start:i])
				start = i + 1
			}
		}
	}
	add(list[start:])
	// "x then y" without a comma
	var split []string
	for _, it := range out {
		for _, p := range strings.Split(it, " then ") {
			split = append(split, strings.TrimSpace(p))
		}
	}
	return split
}

// itemArgs is the count of one listed argument.
func itemArgs(it string, n int, stated map[string]docArg) (int, error) {
	switch {
	case it == "twice":
		return 0, nil // the caller repeats the item before
	case it == "the n " || regexp.MustCompile(`^the (n|known) \w+( \w+)?$`).MatchString(it):
		return n, nil
	case groupOf.MatchString(it):
		return n * len(strings.Split(groupOf.FindStringSubmatch(it)[1], ",")), nil
	case it == "InsertArgs(t)":
		return len(storage.InsertArgs(&storage.Task{})), nil
	case strings.HasSuffix(it, "'s") && !strings.Contains(it, " "):
		part := strings.TrimSuffix(it, "'s")
		switch part {
		case "set", "scope", "where": // the Store's part: none of the driver's own
			return 0, nil
		}
		o, ok := stated[part]
		if !ok {
			return 0, fmt.Errorf("%q: neither a part (set, scope, where) nor a field", it)
		}
		return o(n, stated)
	}
	return 1, nil
}
