package e2e

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/internal/testwait"
	"github.com/argo-retry/argo/runtime"
)

// startOn starts a runtime on dsn with the package's tasks registered.
func startOn(t *testing.T, dsn string) *runtime.Runtime {
	t.Helper()
	ctx := context.Background()
	rt, err := runtime.Start(ctx, runtime.Config{
		DSN: dsn, AutoMigrate: true, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(ctx); argoRuntime.Store(nil) })
	if err := ArgoRegister(rt); err != nil {
		t.Fatal(err)
	}
	return rt
}

// waitUntil polls cond until it holds, failing with what after 10 s
// (testwait.For).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}

// TestArgumentsArriveExactly: through the generated wrapper, strings that
// are not valid UTF-8 and NaN/+Inf/-Inf float64 and float32 arguments, at
// the top level and inside a struct (slices, maps, pointers), reach the
// function bit for bit on both databases.
func TestArgumentsArriveExactly(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seen = newJournal()
			startOn(t, b.DSN)
			ctx := context.Background()
			bad, alsoBad := "caf\xe9 \xff\xfe end", "\xc3("
			nan, inf := math.NaN(), math.Inf(1)
			peak := math.Inf(-1)
			calls := []exactCall{
				{text: bad, f64: nan, f32: float32(inf), measure: Measure{Label: "one " + alsoBad, Values: []float64{nan, inf, -inf, 1.5},
					Ratios: map[string]float32{"nan": float32(nan), "-inf": float32(-inf), "half": 0.5}, Peak: &peak, Notes: []*string{&bad, nil, &alsoBad}}},
				{text: "valid", f64: inf, f32: float32(-inf), measure: Measure{Label: "two", Peak: &nan}},
				{text: alsoBad, f64: -inf, f32: float32(nan), measure: Measure{Label: "three", Values: []float64{}, Ratios: map[string]float32{}}},
			}
			for _, c := range calls {
				if err := ExactDurable(ctx, c.text, c.f64, c.f32, c.measure); err != nil {
					t.Fatalf("ExactDurable(%q): %v", c.text, err)
				}
			}
			var got []exactCall
			waitUntil(t, "three runs of Exact", func() bool {
				seen.do(func(j *journal) { got = append([]exactCall(nil), j.exact...) })
				return len(got) == len(calls)
			})
			for _, want := range calls {
				found := false
				for _, g := range got {
					if g.measure.Label == want.measure.Label {
						found = true
						if !sameBits(reflect.ValueOf(g), reflect.ValueOf(want)) {
							t.Errorf("call %q arrived altered:\n got  %#v\n want %#v", want.measure.Label, g, want)
						}
					}
				}
				if !found {
					t.Errorf("call %q arrived with another label: %#v", want.measure.Label, got)
				}
			}
		})
	}
}

// sameBits is reflect.DeepEqual with floats compared by their bits (NaN
// equals NaN) and unexported fields read.
func sameBits(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		if a.Kind() == reflect.Float32 {
			return math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float()))
		}
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameBits(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameBits(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); !bv.IsValid() || !sameBits(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameBits(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	panic("sameBits: unexpected kind " + a.Kind().String())
}

// TestRenamedNestedFieldIsUndecodable: a stored call whose struct argument
// has a member the current Measure lacks ("qty", renamed since) waits,
// visible with the decoding error naming the member, and Exact never runs
// with a zero value.
func TestRenamedNestedFieldIsUndecodable(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seen = newJournal()
			rt := startOn(t, b.DSN)
			ctx := context.Background()
			stored := `{"text":"t","f64":1,"f32":2,"m":{"label":"renamed","values":null,"ratios":null,"peak":null,"notes":null,"qty":3}}`
			id, err := rt.Submit(ctx, runtime.Call{Task: argoTaskExact, Args: []byte(stored)})
			if err != nil {
				t.Fatal(err)
			}
			var task *runtime.Task
			waitUntil(t, "the decoding error on the row", func() bool {
				task, err = rt.Inspector().Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return task.ErrorMsg != "" || task.State.Terminal()
			})
			if !strings.Contains(task.ErrorMsg, "arguments do not decode") || !strings.Contains(task.ErrorMsg, `argument "m" at /m/qty`) {
				t.Errorf("error_msg %q: want the decoding error naming m and its member qty", task.ErrorMsg)
			}
			if task.State.Terminal() || task.ExecuteTimes != 0 {
				t.Errorf("undecodable task: state %s, execute_times %d; want it waiting, never run", task.State, task.ExecuteTimes)
			}
			seen.do(func(j *journal) {
				if len(j.exact) != 0 {
					t.Errorf("Exact ran with %#v", j.exact)
				}
			})
		})
	}
}

// TestUniqueByKeysAreExact: through the generated wrapper, unique-by keys
// compare byte for byte on both databases ("k" and "k " are two tasks, a
// key that is not UTF-8 works), a 255-byte key is stored and a 256-byte key
// is refused with the same error on both.
func TestUniqueByKeysAreExact(t *testing.T) {
	refusals := map[string]string{}
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seen = newJournal()
			startOn(t, b.DSN)
			ctx := context.Background()
			keys := []string{"k", "k ", "k\xff", strings.Repeat("m", runtime.MaxUniqueKeyBytes)}
			for _, key := range keys {
				if err := OnceDurable(ctx, key); err != nil {
					t.Fatalf("OnceDurable(%q): %v", key, err)
				}
			}
			for _, key := range keys {
				if err := OnceDurable(ctx, key); !errors.Is(err, runtime.ErrDuplicate) {
					t.Errorf("OnceDurable(%q) again: %v, want ErrDuplicate", key, err)
				}
			}
			waitUntil(t, "one run per key", func() bool {
				n := 0
				seen.do(func(j *journal) { n = len(j.once) })
				return n == len(keys)
			})
			seen.do(func(j *journal) {
				for _, key := range keys {
					if j.once[key] != 1 {
						t.Errorf("key %q ran %d times, want 1", key, j.once[key])
					}
				}
			})
			err := OnceDurable(ctx, strings.Repeat("m", runtime.MaxUniqueKeyBytes+1))
			if !errors.Is(err, runtime.ErrNotPersisted) || !strings.Contains(err.Error(), "limit of 255 bytes: hash longer keys") {
				t.Fatalf("256-byte key: %v, want ErrNotPersisted saying the limit and to hash", err)
			}
			refusals[b.Name] = err.Error()
		})
	}
	if s, m := refusals["sqlite"], refusals["mysql"]; m != "" && s != m {
		t.Errorf("the 256-byte key is refused differently:\n sqlite %s\n mysql  %s", s, m)
	}
}
