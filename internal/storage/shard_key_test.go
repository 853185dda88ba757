package storage_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
)

// A sharding proxy (Vitess, ShardingSphere) routes a statement to one
// database shard only when it names the sharding column, argo_task's
// shard_key (docs/deployment.md, "Vitess and ShardingSphere"); a statement
// that names only id is sent to every shard. TestByIDStatementsNameShardKey
// walks every statement argo sends and fails on each that addresses rows of
// argo_task, argo_task_attempt or argo_task_dep by their ids (id = ?,
// id IN (?, …), task_pk / upstream_pk = ? or IN (…)) and does not name
// shard_key (shard_key = ? or shard_key IN (?, …)) beside them, unless
// shardKeyExceptions names it with its reason.
//
// "By id" is the test's meaning of single-row: the statement's caller holds
// the rows it means (their ids), so it could hold their shard keys too; a
// batch by ids (… id IN (?, ?, ?)) is a set of single-row statements and must
// name their shard keys as well (shard_key IN (…): the proxy routes it to
// those shards only). A statement that selects rows by a condition on other
// columns (the claim's due scan, the rescuer's expired leases, the purge's
// candidates, the console's counts) is a sweep over every shard by
// construction: no key routes it, and it is not flagged. A claim scan is
// routable in part (its scope may name the owned shards): that is the scope's
// business (storage.ClaimGroup.Shards), not this test's.
//
// The statements walked: every field of storage.Statements of every driver
// (builders called with 1 and 2 rows), the statements the Store builds from
// them (FinishStatement, DependencySteps, mysqldriver.ClaimTakeAll), and
// every SQL string constant or literal in the non-test files of
// internal/storage and its drivers outside the drivers' *statements.go
// (those are the Statements already): constants folded, other expressions
// read as a placeholder. A new statement by id without shard_key fails here
// by name.
func TestByIDStatementsNameShardKey(t *testing.T) {
	stmts := walkedStatements(t)
	if len(stmts) < 150 {
		t.Fatalf("walked %d statements: fewer than argo sends (is the walk reading Statements?)", len(stmts))
	}
	flagged := map[string][]string{} // name -> dialects
	for _, s := range stmts {
		if why := byIDWithoutShardKey(s.query); why != "" {
			if slices.Contains(flagged[s.name], s.dialect) {
				continue // one report per statement and dialect
			}
			flagged[s.name] = append(flagged[s.name], s.dialect)
			if _, ok := shardKeyExceptions[s.name]; !ok {
				t.Errorf("%s (%s): addresses rows by id (%s) without shard_key: add shard_key = ? (the caller's Task.ShardKey or Fence.Shard) beside the id, or name it in shardKeyExceptions with the reason\n\t%s", s.name, s.dialect, why, s.query)
			}
		}
	}
	for name, reason := range shardKeyExceptions {
		if strings.TrimSpace(reason) == "" {
			t.Errorf("shardKeyExceptions[%s]: no reason", name)
		}
		if _, ok := flagged[name]; !ok {
			t.Errorf("shardKeyExceptions[%s]: no walked statement of that name addresses rows by id without shard_key any more: remove it from the table", name)
		}
	}
}

// shardKeyExceptions are the statements by id that do not name shard_key,
// each with the reason. Keys are Statements field names (both dialects) or
// file:declaration for a statement in a Go source file. Three reasons, and
// no other: the caller holds only an id (an operator's), the table has no
// shard_key column (argo_task_attempt), or the statement follows the
// dependency edges, which join tasks of any two shards (argo_task_dep).
// docs/deployment.md ("Vitess and ShardingSphere") lists them for a
// deployment: each is sent to every shard, or routed by a lookup on id.
var shardKeyExceptions = map[string]string{
	// An operator names a task by its id alone (argoctl show/discard/
	// force-fail/run-now/requeue/transient-fail ID, the console's task page,
	// Inspector.Get): argo does not know its shard. Reading the row first to
	// learn it would be the same scatter plus one more statement.
	"GetTask":              "operator reads by id alone (Inspector.Get, argoctl show, Cancel's and the operator commands' read); the runtime's reads use GetTaskOnShard",
	"TaskState":            "operator read by id alone (Store.TaskState)",
	"AttemptOnTaskRow":     "operator read by id alone (Inspector.Attempts, argoctl show)",
	"RequeueSource":        "operator requeue by id alone; the writes after it (MarkRequeued, LinkRequeued) carry the shard key it read",
	"RequeueLinks":         "operator read by id alone (argoctl show, the console)",
	"Discard":              "operator discard by id alone: one statement, no read before it to learn the shard",
	"ForceFail":            "operator force-fail by id alone: one statement, no read before it",
	"RunNow":               "operator run-now by id alone: one statement, no read before it",
	"InsertDiscardRequest": "operator discard request by id alone: one statement (INSERT … SELECT), no read before it",
	// argo_task_attempt has no shard_key column: each statement on it names
	// the task by task_pk only. Routing the history with its task needs the
	// column (a migration, a backfill) first: docs/deployment.md.
	"TaskAttempts":                           "argo_task_attempt has no shard_key column",
	"AttemptRecorded":                        "argo_task_attempt has no shard_key column",
	"DeleteAttempts":                         "argo_task_attempt has no shard_key column",
	"transient_fail.go:transientFailPending": "argo_task_attempt has no shard_key column",
	// An edge of argo_task_dep joins an upstream and a downstream task on
	// any two shards, and Call.After names upstream tasks by id alone: the
	// dependency statements follow edges to rows whose shard no caller holds.
	"DepUpstreamStates":                         "upstream tasks named by id alone (Call.After)",
	"finish_downstream.go:Store.markDownstream": "upstream tasks named by id alone (Call.After)",
	"DepRecordOutcome":                          "argo_task_dep by upstream_pk: edges cross shards",
	"DepRelease":                                "argo_task_dep by upstream_pk: edges cross shards",
	"DepSkip":                                   "argo_task_dep by upstream_pk: edges cross shards",
	"DependencySteps":                           "DepRecordOutcome, DepRelease, DepSkip: edges cross shards",
	"DepUpstream":                               "argo_task_dep by task_pk: edges cross shards",
	"DepDownstream":                             "argo_task_dep by upstream_pk: edges cross shards",
	"DepDownstreamClosure":                      "argo_task_dep by upstream_pk, transitively: edges cross shards",
	"DepEdgesOf":                                "argo_task_dep by task_pk: edges cross shards",
	"DepRepoint":                                "argo_task_dep by upstream_pk: edges cross shards",
	"DeleteDeps":                                "argo_task_dep by task_pk and upstream_pk: edges cross shards",
	"DepUnskip":                                 "tasks found by following edges (DepDownstreamClosure), by id alone",
	"blocked_sweep.go:Store.skipWithDownstream": "tasks found by following edges, by id alone",
	"blocked_sweep.go:blockedState":             "a task found by following edges, by id alone",
	"order_requeue.go:Store.keyedAmong":         "tasks found by following edges (the requeue's skipped downstream), by id alone",
}

// walkedStatement is one statement argo sends.
type walkedStatement struct {
	name    string // Statements field, or file:declaration
	dialect string // mysql, sqlite, or "source"
	query   string
}

func walkedStatements(t *testing.T) []walkedStatement {
	t.Helper()
	var out []walkedStatement
	for _, dialect := range storage.Dialects() {
		st, err := storage.StatementsFor(dialect)
		if err != nil {
			t.Fatal(err)
		}
		v := reflect.ValueOf(st).Elem()
		typ := v.Type()
		for i := range typ.NumField() {
			field := typ.Field(i)
			for _, q := range fieldQueries(t, field, v.Field(i)) {
				out = append(out, walkedStatement{field.Name, dialect, q})
			}
		}
		msg := "failed"
		for _, f := range []storage.Finishing{
			{To: storage.StateSucceeded},
			{To: storage.StateRetrying, HoldUntil: 1},
			{To: storage.StateRetrying, ErrMsg: &msg, History: &storage.Attempt{Kind: "attempt"}},
			{To: storage.StateExhausted, ErrMsg: &msg, FallbackErr: &msg, UndoAttempt: true, Deferred: true, History: &storage.Attempt{Kind: "fallback"}},
		} {
			q, _ := storage.FinishStatement(st, f, 1)
			out = append(out, walkedStatement{"FinishStatement", dialect, q})
		}
		for _, to := range []storage.State{argotype.StateSucceeded, argotype.StateDead, argotype.StateSkipped} {
			for _, step := range storage.DependencySteps(st, 1, to, 1) {
				out = append(out, walkedStatement{"DependencySteps", dialect, step.Query})
			}
		}
	}
	for _, n := range []int{1, 2} {
		out = append(out, walkedStatement{"mysqldriver.ClaimTakeAll", "mysql", mysqldriver.ClaimTakeAll(n)})
	}
	for _, dir := range []string{".", "mysqldriver", "sqlitedriver"} {
		out = append(out, sourceStatements(t, dir)...)
	}
	return out
}

// fieldQueries is the SQL of one Statements field: a string, the queries
// of a slice of SchemaProbe, or a builder called with 1 and 2 rows and
// samplePart parts.
func fieldQueries(t *testing.T, field reflect.StructField, v reflect.Value) []string {
	t.Helper()
	switch field.Type.Kind() {
	case reflect.String:
		return []string{v.String()}
	case reflect.Slice:
		var qs []string
		for i := range v.Len() {
			qs = append(qs, fmt.Sprint(v.Index(i).FieldByName("Query").Interface()))
		}
		return qs
	case reflect.Func:
		var qs []string
		for _, n := range []int{1, 2} {
			in := make([]reflect.Value, field.Type.NumIn())
			for i := range in {
				switch field.Type.In(i).Kind() {
				case reflect.Int:
					in[i] = reflect.ValueOf(n)
				case reflect.String:
					in[i] = reflect.ValueOf(samplePart)
				default:
					t.Fatalf("%s: parameter %d of kind %s: extend this test", field.Name, i, field.Type.In(i).Kind())
				}
			}
			qs = append(qs, v.Call(in)[0].String())
		}
		return qs
	}
	t.Fatalf("%s: kind %s: extend this test", field.Name, field.Type.Kind())
	return nil
}

// sourceStatements folds the string expressions of the non-test Go files
// of dir (outside *statements.go) and returns those that are SQL on argo's
// task tables, named file:declaration.
func sourceStatements(t *testing.T, dir string) []walkedStatement {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	var names []string
	consts := map[string]ast.Expr{}
	for _, path := range files {
		base := filepath.Base(path)
		if strings.HasSuffix(base, "_test.go") || strings.HasSuffix(base, "statements.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed, names = append(parsed, f), append(names, base)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && (g.Tok == token.CONST || g.Tok == token.VAR) {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							consts[id.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var out []walkedStatement
	for i, f := range parsed {
		for _, d := range f.Decls {
			decl := declName(d)
			seen := map[string]bool{}
			ast.Inspect(d, func(n ast.Node) bool {
				e, ok := n.(ast.Expr)
				if !ok {
					return true
				}
				switch e.(type) {
				case *ast.BasicLit, *ast.BinaryExpr:
				default:
					return true
				}
				q, ok := foldString(e, consts, 0)
				if !ok {
					return true
				}
				q = strings.Join(strings.Fields(q), " ")
				if isTaskSQL(q) && !seen[q] {
					seen[q] = true
					out = append(out, walkedStatement{names[i] + ":" + decl, "source", q})
				}
				return false // the largest string expression only
			})
		}
	}
	return out
}

func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			typ := d.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				return id.Name + "." + d.Name.Name
			}
		}
		return d.Name.Name
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok && len(vs.Names) > 0 {
				return vs.Names[0].Name
			}
		}
	}
	return "?"
}

// foldString evaluates a string expression: literals, + and the package's
// constants and variables; a call of a placeholder builder reads as "(?)",
// any other operand as "0". ok is false unless some part is a string
// literal.
func foldString(e ast.Expr, consts map[string]ast.Expr, depth int) (string, bool) {
	if depth > 20 {
		return "0", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "0", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.ParenExpr:
		return foldString(e.X, consts, depth+1)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "0", false
		}
		x, okx := foldString(e.X, consts, depth+1)
		y, oky := foldString(e.Y, consts, depth+1)
		return x + y, okx || oky
	case *ast.Ident:
		if c, ok := consts[e.Name]; ok {
			s, _ := foldString(c, consts, depth+1)
			return s, false
		}
	case *ast.CallExpr:
		name := ""
		switch fn := e.Fun.(type) {
		case *ast.Ident:
			name = fn.Name
		case *ast.SelectorExpr:
			name = fn.Sel.Name
		}
		if strings.Contains(strings.ToLower(name), "placeholders") {
			return "(?)", false
		}
	}
	return "0", false
}

var (
	taskTables  = regexp.MustCompile(`(?i)\bargo_task(_attempt|_dep)?\b`)
	sqlVerb     = regexp.MustCompile(`(?i)^\s*(SELECT|UPDATE|DELETE|INSERT|WITH)\b`)
	byIDPattern = regexp.MustCompile(`(?i)(?:^|[^\w.])(?:\w+\.)?(id|task_pk|upstream_pk)\s*(?:=\s*\?|IN\s*\(\s*\?)`)
	shardNamed  = regexp.MustCompile(`(?i)(?:^|[^\w.])(?:\w+\.)?shard_key\s*(?:=\s*\?|IN\s*\(\s*\?)`)
)

func isTaskSQL(q string) bool { return sqlVerb.MatchString(q) && taskTables.MatchString(q) }

// byIDWithoutShardKey returns what addresses rows by id in one of q's
// statements (split at ';') that names no shard_key, or "".
func byIDWithoutShardKey(q string) string {
	for _, part := range strings.Split(q, ";") {
		if !isTaskSQL(part) {
			continue
		}
		if m := byIDPattern.FindString(part); m != "" && !shardNamed.MatchString(part) {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

func TestByIDWithoutShardKey(t *testing.T) {
	for q, want := range map[string]bool{
		"UPDATE argo_task SET a = ? WHERE id = ? AND shard_key = ?":                                                  false,
		"UPDATE argo_task SET a = ? WHERE id = ?":                                                                    true,
		"SELECT id FROM argo_task WHERE id IN (?, ?)":                                                                true,
		"SELECT id FROM argo_task WHERE id IN (?, ?) AND shard_key IN (?, ?)":                                        false,
		"SELECT 1 FROM argo_task_attempt WHERE task_pk = ?":                                                          true,
		"SELECT 1 FROM argo_task t JOIN argo_task_dep e ON e.task_pk = t.id WHERE t.status = ?":                      false,
		"SELECT id FROM argo_task WHERE due_at <= ? LIMIT ?":                                                         false,
		"SELECT 1 FROM argo_flow WHERE id = ?":                                                                       false,
		"UPDATE argo_task SET a = 1 WHERE id = ? AND shard_key = ?; DELETE FROM argo_task_attempt WHERE task_pk = ?": true,
	} {
		if got := byIDWithoutShardKey(q) != ""; got != want {
			t.Errorf("byIDWithoutShardKey(%q) = %v, want %v", q, got, want)
		}
	}
}
