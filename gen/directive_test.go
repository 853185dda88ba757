package gen

import (
	"go/ast"
	"go/token"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/argotype"
)

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []arg // pos is the byte offset + 1
		bad  []string
	}{
		{in: "", want: nil},
		{in: "a=1  b=2", want: []arg{{"a", "1", 1}, {"b", "2", 6}}},
		{in: `alert="executeTimes >= 3" x=y`, want: []arg{{"alert", "executeTimes >= 3", 1}, {"x", "y", 27}}},
		{in: `"alert=a b" x=y`, want: []arg{{"alert", "a b", 1}, {"x", "y", 13}}},
		{in: "alert=`a \"b\"`", want: []arg{{"alert", `a "b"`, 1}}},
		{in: "name=é x=1", want: []arg{{"name", "é", 1}, {"x", "1", 9}}},
		{in: "a=1 oops b=2", want: []arg{{"a", "1", 1}, {"b", "2", 10}}, bad: []string{`5:argument "oops" is not key=value`}},
		{in: "=1 b=", want: []arg{{"b", "", 4}}, bad: []string{"1:argument has no key"}},
		{in: `a="x`, bad: []string{"3:unterminated"}},
		{in: `a="x"y`, bad: []string{"6:a quoted string must be followed by a space"}},
	} {
		got, bad := splitArgs(tc.in, 1)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitArgs(%q) = %v, want %v", tc.in, got, tc.want)
		}
		var msgs []string
		for _, b := range bad {
			msgs = append(msgs, strings.TrimSpace(b.msg))
		}
		if len(bad) != len(tc.bad) {
			t.Errorf("splitArgs(%q) errors = %v, want %v", tc.in, msgs, tc.bad)
			continue
		}
		for i, b := range bad {
			pos, msg, _ := strings.Cut(tc.bad[i], ":")
			if got := b.pos; got != token.Pos(atoi(pos)) || !strings.HasPrefix(b.msg, msg) {
				t.Errorf("splitArgs(%q) error %d = %d:%s, want %s", tc.in, i, got, b.msg, tc.bad[i])
			}
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

func parse(t *testing.T, line string) (*spec, ErrorList) {
	t.Helper()
	fset := token.NewFileSet()
	f := fset.AddFile("x.go", -1, 1000)
	f.SetLines([]int{0})
	d, ok := ast.ParseDirective(token.Pos(f.Base()), line)
	if !ok {
		t.Fatalf("not a directive: %s", line)
	}
	e := &errs{fset: fset}
	s := parseDirective(e, d)
	return s, e.list
}

func TestDirectiveDefaults(t *testing.T) {
	s, errs := parse(t, "//argo:retry")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(s.policy, argotype.DefaultRetryPolicy()) || s.mode != argotype.Immediate || s.thread != argotype.Async || s.firstDelay != 0 {
		t.Errorf("defaults: %+v", s)
	}
}

func TestDirectiveValues(t *testing.T) {
	s, errs := parse(t, `//argo:retry name=n retries=unlimited backoff=linear delay=2s max-delay=0 jitter=+300ms timeout=5s mode=schedule first-delay=1m fallback=f alert="exhausted" alert-action=a shard-by=p unique-by=q`)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := argotype.RetryPolicy{MaxAttempts: argotype.Unlimited, Backoff: argotype.BackoffLinear, Initial: 2 * time.Second, Multiplier: 2, MaxDelay: 0,
		Jitter: argotype.Jitter{Kind: argotype.JitterAdditive, Max: 300 * time.Millisecond}, Timeout: 5 * time.Second}
	if !reflect.DeepEqual(s.policy, want) {
		t.Errorf("policy = %+v, want %+v", s.policy, want)
	}
	if s.name != "n" || s.mode != argotype.Scheduled || s.firstDelay != time.Minute || s.fallback != "f" || s.alert != "exhausted" ||
		s.alertAction != "a" || s.shardBy != "p" || s.uniqueBy != "q" {
		t.Errorf("spec = %+v", s)
	}
	if s, _ := parse(t, "//argo:retry retries=0"); s.policy.MaxAttempts != 1 {
		t.Errorf("retries=0 gives %d attempts, want 1", s.policy.MaxAttempts)
	}
}

func TestDirectiveErrors(t *testing.T) {
	for line, want := range map[string]string{
		"//argo:retry retrys=1":                    "retrys: unknown key (did you mean retries?)",
		"//argo:retry retries=-1":                  `retries: bad value "-1"`,
		"//argo:retry retries=1 retries=2":         "retries: duplicate key",
		"//argo:retry multiplier=0.5":              `multiplier: bad value "0.5"`,
		"//argo:retry backoff=linear multiplier=3": "multiplier: applies only to backoff=exponential",
		"//argo:retry first-delay=1s":              "first-delay: requires mode=schedule",
		"//argo:retry alert-action=x":              "alert-action: requires alert",
		`//argo:retry alert="executeTimes"`:        `alert: bad value "executeTimes"`,
		`//argo:retry alert="  "`:                  `alert: bad value "  "`,
		"//argo:retry jitter=":                     `jitter: bad value ""`,
		"//argo:retry shard-by=a.b":                `shard-by: bad value "a.b"`,
		"//argo:retry name=\" x\"":                 `name: bad value " x"`,
		"//argo:retry mode=schedule thread=sync":   "thread: sync runs the first attempt",
	} {
		_, errs := parse(t, line)
		if len(errs) != 1 || !strings.Contains(errs[0].Msg, want) {
			t.Errorf("%s: errors %v, want one containing %q", line, errs, want)
		}
	}
}
