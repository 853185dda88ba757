package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// codeObserver records the codes it is told of.
type codeObserver struct {
	attemptObserver
	mu    sync.Mutex
	codes []string
}

func (o *codeObserver) AttemptErrorCode(task, code string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.codes = append(o.codes, task+"/"+code)
}

func (o *codeObserver) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.codes)
}

// Coded keeps the error's text, errors.Is/As and its classification; the
// outermost valid code wins; a bad code is refused whole (not cut), the
// error then has no code and its text quotes the code and the rule.
func TestCodedKeepsTheError(t *testing.T) {
	base := errors.New("gateway timeout")
	if Coded(nil, "X") != nil {
		t.Fatal("Coded(nil) is not nil")
	}
	err := fmt.Errorf("charge: %w", Coded(Permanent(base), "PAY_TIMEOUT"))
	if !errors.Is(err, base) || !IsPermanent(err) || ErrorCode(err) != "PAY_TIMEOUT" || err.Error() != "charge: gateway timeout" {
		t.Fatalf("Coded lost something: is %v permanent %v code %q text %q", errors.Is(err, base), IsPermanent(err), ErrorCode(err), err)
	}
	if _, ok := retryAfterOf(Coded(RetryAfter(base, time.Second), "SLOW")); !ok {
		t.Fatal("RetryAfter under Coded is not seen")
	}
	if got := ErrorCode(Coded(Coded(base, "INNER"), "OUTER")); got != "OUTER" {
		t.Fatalf("nested codes: %q, want OUTER", got)
	}
	if got := ErrorCode(Coded(Coded(base, "INNER"), "bad code")); got != "INNER" {
		t.Fatalf("a refused outer code over a valid one: %q, want INNER", got)
	}
	long := strings.Repeat("C", MaxErrorCode+1)
	for _, code := range []string{"", long, "NON_ASCII_é", "BAD\xff", "A\x00B", "TWO WORDS"} {
		e := Coded(base, code)
		if ErrorCode(e) != "" || !errors.Is(e, base) {
			t.Fatalf("code %q: ErrorCode %q, wraps base %v", code, ErrorCode(e), errors.Is(e, base))
		}
		msg := e.Error()
		if !strings.HasPrefix(msg, "gateway timeout [argo: error code ") || !strings.Contains(msg, "refused: a code is 1 to 64 characters of A-Z a-z 0-9 _ . - :") || strings.ContainsRune(msg, 0) || !strings.Contains(msg, fmt.Sprintf("(%d bytes)", len(code))) {
			t.Fatalf("code %q: text %q, want the refusal quoting it", code, msg)
		}
	}
	if err := CheckErrorCode(strings.Repeat("Z", MaxErrorCode)); err != nil {
		t.Fatalf("a %d-byte code: %v", MaxErrorCode, err)
	}
}

// Each failed attempt's code is on its history row and the task holds the
// last failed attempt's; a code Coded refused (65 bytes, not UTF-8, NUL)
// is not stored and the attempt's stored error text says why, quoting it
// escaped; the observer counts the valid codes. On MariaDB (strict mode)
// too, where a bad code written as given would have refused the finish.
func TestErrorCodeRecorded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		long := strings.Repeat("L", MaxErrorCode+1)
		returns := []error{
			Coded(errors.New("gateway timeout"), "PAY_TIMEOUT"),
			Coded(errors.New("long"), long),
			Coded(errors.New("not utf-8"), "BAD\xff"),
			Coded(errors.New("nul"), "A\x00B"),
			errors.New("no code"),
			fmt.Errorf("charge: %w", Coded(Permanent(errors.New("declined")), "CARD_DECLINED")),
		}
		var mu sync.Mutex
		n := 0
		def := &TaskDef{Name: "code.recorded", Policy: fastPolicy(len(returns) + 1), Run: func(ctx context.Context, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			return returns[n-1]
		}}
		cfg := testConfigT(t, dsn)
		obs := &codeObserver{attemptObserver: attemptObserver{done: make(chan struct{}, 1)}}
		cfg.Observer = obs
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateDead, 30*time.Second)
		if task.ErrorCode != "CARD_DECLINED" {
			t.Fatalf("task code %q, want the last failed attempt's CARD_DECLINED", task.ErrorCode)
		}
		hist, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var codes []string
		for _, a := range hist {
			if a.Kind == "attempt" {
				codes = append(codes, a.ErrorCode)
			}
		}
		if want := []string{"PAY_TIMEOUT", "", "", "", "", "CARD_DECLINED"}; !slices.Equal(codes, want) {
			t.Fatalf("history codes %q, want %q", codes, want)
		}
		for i, quoted := range map[int]string{1: `"` + long + `" (65 bytes)`, 2: `"BAD\xff" (4 bytes)`, 3: `"A\x00B" (3 bytes)`} {
			if e := hist[i].Error; !strings.Contains(e, "error code "+quoted+" refused") {
				t.Fatalf("attempt %d's error text %q does not quote its refused code %s", i+1, e, quoted)
			}
		}
		waitFor(t, 10*time.Second, "the observer to count both codes", func() bool { return len(obs.seen()) == 2 })
		if got := obs.seen(); !slices.Equal(got, []string{"code.recorded/PAY_TIMEOUT", "code.recorded/CARD_DECLINED"}) {
			t.Fatalf("observer saw %q", got)
		}
		tasks, err := rt.Inspector().List(context.Background(), Filter{ErrorCode: "CARD_DECLINED"})
		if err != nil || len(tasks) != 1 || tasks[0].ID != id {
			t.Fatalf("List by code: %v, %v", tasks, err)
		}
		if _, err := rt.Inspector().List(context.Background(), Filter{ErrorCode: "bad code"}); err == nil || !strings.Contains(err.Error(), "A-Z a-z 0-9") {
			t.Fatalf("List by a code Coded would refuse: %v, want the rule", err)
		}
	})
}

// Config.ErrorCode classifies an error without a Coded code; a Coded code
// wins over it; a classifier's bad code is not stored and the attempt's
// text says so.
func TestConfigErrorCodeClassifier(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		returns := []error{errors.New("HTTP 503"), Coded(errors.New("HTTP 503"), "OWN"), errors.New("weird")}
		var mu sync.Mutex
		n := 0
		def := &TaskDef{Name: "code.classified", Policy: fastPolicy(len(returns)), Run: func(ctx context.Context, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			n++
			return returns[n-1]
		}}
		cfg := testConfigT(t, dsn)
		cfg.ErrorCode = func(err error) string {
			if strings.Contains(err.Error(), "503") {
				return "HTTP_503"
			}
			return "not a code"
		}
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateDead, 30*time.Second)
		hist, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil || len(hist) < 3 {
			t.Fatalf("history %+v, %v", hist, err)
		}
		if hist[0].ErrorCode != "HTTP_503" || hist[1].ErrorCode != "OWN" || hist[2].ErrorCode != "" || !strings.Contains(hist[2].Error, `error code "not a code" (10 bytes) refused`) || !strings.Contains(hist[2].Error, "Config.ErrorCode") {
			t.Fatalf("history %+v", hist[:3])
		}
	})
}

// A failed fallback's code is on its history row; the task keeps its last
// failed attempt's code (the fallback's goes with fallback_error_msg, not
// with the attempts').
func TestFallbackErrorCode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		def := &TaskDef{Name: "code.fallback", Policy: fastPolicy(1),
			Run: func(ctx context.Context, _ []byte) error { return Coded(errors.New("down"), "DOWN") },
			Fallback: func(ctx context.Context, _ []byte, _ error) error {
				return Coded(errors.New("by hand failed too"), "FB_FAILED")
			}}
		rt := startRuntime(t, testConfigT(t, dsn))
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateDead, 30*time.Second)
		hist, err := rt.Inspector().Attempts(context.Background(), id)
		if err != nil || len(hist) != 2 {
			t.Fatalf("history %+v, %v; want the attempt and the fallback", hist, err)
		}
		if hist[0].Kind != "attempt" || hist[0].ErrorCode != "DOWN" || hist[1].Kind != "fallback" || hist[1].ErrorCode != "FB_FAILED" || task.ErrorCode != "DOWN" {
			t.Fatalf("history %+v, task code %q; want DOWN on the attempt and the task, FB_FAILED on the fallback", hist, task.ErrorCode)
		}
	})
}
