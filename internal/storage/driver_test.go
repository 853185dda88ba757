package storage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	_ "github.com/argo-retry/argo/internal/storage/mysqldriver"
	_ "github.com/argo-retry/argo/internal/storage/sqlitedriver"
)

// TestEveryDriverFillsEveryStatement fails when a registered driver leaves
// a statement unset: the Store would run an empty statement (or call a nil
// builder) on that engine.
func TestEveryDriverFillsEveryStatement(t *testing.T) {
	dialects := storage.Dialects()
	if !slices.Contains(dialects, "mysql") || !slices.Contains(dialects, "sqlite") {
		t.Fatalf("registered dialects %v, want mysql and sqlite among them", dialects)
	}
	for _, dialect := range dialects {
		st, err := storage.StatementsFor(dialect)
		if err != nil {
			t.Fatal(err)
		}
		v := reflect.ValueOf(st).Elem()
		for i := range v.NumField() {
			f, name := v.Field(i), dialect+": Statements."+v.Type().Field(i).Name
			switch f.Kind() {
			case reflect.String:
				if strings.TrimSpace(f.String()) == "" {
					t.Errorf("%s is empty", name)
				}
			case reflect.Func, reflect.Slice:
				if f.IsNil() || (f.Kind() == reflect.Slice && f.Len() == 0) {
					t.Errorf("%s is not set", name)
				}
			default:
				t.Errorf("%s: kind %s not checked: extend this test", name, f.Kind())
			}
		}
	}
}

// TestStateSetsFollowTheConstants checks that the sets the statements name
// render the argotype constants' stored values.
func TestStateSetsFollowTheConstants(t *testing.T) {
	for _, c := range []struct {
		set  []storage.State
		want []argotype.State
	}{
		{storage.ClaimableStates, []argotype.State{argotype.StatePending, argotype.StateRetrying, argotype.StateExhausted}},
		{storage.LeasedStates, []argotype.State{argotype.StateRunning, argotype.StateFallingBack}},
		{storage.PurgeableStates, []argotype.State{argotype.StateSucceeded, argotype.StateRecovered, argotype.StateDiscarded, argotype.StateSkipped}},
		{storage.RequeueableStates, []argotype.State{argotype.StateDead, argotype.StateDiscarded}},
	} {
		var parts []string
		for _, s := range c.want {
			parts = append(parts, strings.TrimSpace(storage.StateValue(s)))
		}
		if got, want := storage.StateSet(c.set...), "("+strings.Join(parts, ", ")+")"; got != want {
			t.Errorf("StateSet(%v) = %s, want %s", c.set, got, want)
		}
	}
	if got := storage.StateSet(argotype.StatePending, argotype.StateRetrying, argotype.StateExhausted); got != "(0, 2, 4)" {
		t.Errorf("claimable states render %s, want (0, 2, 4) (the stored values of argo_task.task_status)", got)
	}
	for _, s := range storage.LeasedStates {
		if !s.Leased() {
			t.Errorf("%s in LeasedStates is not leased", s)
		}
	}
}

// sourceFiles returns the non-test Go files of the storage packages and
// the runtime.
func sourceFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{".", "mysqldriver", "sqlitedriver", "../../runtime"} {
		matches, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if !strings.HasSuffix(m, "_test.go") {
				files = append(files, m)
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("found %d source files: run from internal/storage", len(files))
	}
	return files
}

// TestNoBareStateNumbersInStatements fails on a state set written as
// numbers ("IN (0, 2, 4)") or a state compared with a number in statement
// text: sets come from StateSet over the argotype constants.
func TestNoBareStateNumbersInStatements(t *testing.T) {
	bare := regexp.MustCompile(`IN \(\d|task_status\s*(=|<>|!=|<|>)\s*\d`)
	for _, f := range sourceFiles(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(body), "\n") {
			if bare.MatchString(line) {
				t.Errorf("%s:%d: a state as a bare number: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestDialectNamedOnlyByTheRegistry fails on code that branches on the
// dialect name outside the driver registry (driver.go): an engine's
// differences belong in its driver package.
func TestDialectNamedOnlyByTheRegistry(t *testing.T) {
	branch := regexp.MustCompile(`(?i)dialect(\(\))?\s*[!=]=|[!=]=\s*(\w+\.)?Dialect(MySQL|SQLite)\b|[!=]=\s*"(mysql|sqlite)"`)
	for _, f := range sourceFiles(t) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(body), "\n") {
			if branch.MatchString(line) {
				t.Errorf("%s:%d: branches on the dialect: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

// TestUnknownDialectSaysWhichThereAre checks the one place a dialect name
// is looked up: an unknown one is refused, naming the registered ones.
func TestUnknownDialectSaysWhichThereAre(t *testing.T) {
	_, err := storage.Migrate(context.Background(), nil, "postgres")
	if err == nil || !strings.Contains(err.Error(), `dialect "postgres" unknown: want one of mysql, sqlite`) {
		t.Fatalf("Migrate on an unknown dialect: %v", err)
	}
	if storage.Known("postgres") || !storage.Known("mysql") || !storage.Known("sqlite") {
		t.Fatal("Known disagrees with the registered drivers")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `dialect "postgres" unknown`) {
			t.Fatalf("New on an unknown dialect: recovered %v, want a panic naming it", r)
		}
	}()
	storage.New(nil, "postgres", storage.Options{})
}
