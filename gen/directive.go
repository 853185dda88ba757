package gen

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/alertexpr"
)

// directiveTool and directiveName make the //argo:retry directive.
const (
	directiveTool = "argo"
	directiveName = "retry"
)

// spec is one parsed //argo:retry directive: every key resolved to its value
// or its default.
type spec struct {
	slash      token.Pos            // the directive's "//"
	pos        map[string]token.Pos // key → position of its argument
	name       string               // "" = the default name
	policy     argotype.RetryPolicy
	mode       argotype.Mode
	thread     argotype.Thread
	firstDelay time.Duration

	fallback, alert, alertAction, shardBy, uniqueBy string

	flow flowSpec // limit=, rate=, burst=, breaker=, cooldown= (flow_keys.go)

	tenantBy string // tenant-by=
	orderBy  string // order-by= (order_key.go)

	alertChannels []string // alert-channel= (alert_channel_key.go)
}

// arg is one key=value argument of a directive line.
type arg struct {
	key, value string
	pos        token.Pos // of the argument's first character
}

// parseDirective reads the arguments of an //argo:retry line whose "//" is
// at slash. Every problem is reported to e; the result is usable (defaults
// in place of bad values) even when there were errors.
func parseDirective(e *errs, d ast.Directive) *spec {
	s := &spec{
		slash:  d.Slash,
		pos:    map[string]token.Pos{},
		policy: argotype.DefaultRetryPolicy(),
		mode:   argotype.Immediate,
		thread: argotype.Async,
	}
	args, bad := splitArgs(d.Args, d.ArgsPos)
	for _, err := range bad {
		e.at(err.pos, "//argo:retry: %s", err.msg)
	}
	for _, a := range args {
		if first, dup := s.pos[a.key]; dup {
			e.at(a.pos, "%s: duplicate key (first at column %d)", a.key, e.fset.Position(first).Column)
			continue
		}
		set, known := setterOf(a.key)
		if !known {
			e.at(a.pos, "%s: unknown key%s (known keys: %s)", a.key, suggest(a.key), strings.Join(keyNames(), ", "))
			continue
		}
		s.pos[a.key] = a.pos
		if msg := set(s, a.value); msg != "" {
			e.at(a.pos, "%s: bad value %q: %s", a.key, a.value, msg)
		}
	}
	s.crossCheck(e)
	return s
}

// crossCheck reports keys that contradict each other.
func (s *spec) crossCheck(e *errs) {
	if p, ok := s.pos["multiplier"]; ok && s.policy.Backoff != argotype.BackoffExponential {
		e.at(p, "multiplier: applies only to backoff=exponential (backoff is %s)", s.policy.Backoff)
	}
	if p, ok := s.pos["first-delay"]; ok && s.mode != argotype.Scheduled {
		e.at(p, "first-delay: requires mode=schedule")
	}
	if p, ok := s.pos["thread"]; ok && s.thread == argotype.Sync && s.mode == argotype.Scheduled {
		e.at(p, "thread: sync runs the first attempt in the caller's goroutine; it cannot be combined with mode=schedule")
	}
	if p, ok := s.pos["alert-action"]; ok && s.alert == "" {
		e.at(p, "alert-action: requires alert=\"EXPR\"")
	}
	if err := s.policy.Validate(); err != nil {
		e.at(s.slash, "//argo:retry: %v", err)
	}
	s.crossCheckFlow(e)
	s.crossCheckAlertChannel(e)
}

// directiveKey is one key of //argo:retry: its name and the setter that
// parses its value into a spec, returning "" or what is wrong.
type directiveKey struct {
	name string
	set  func(s *spec, v string) string
}

// directiveKeys is every key of //argo:retry, in the order of the README's
// directive table (TestDirectiveKeysInDocumentationOrder checks it). A new
// key is a row here, with its setter next to its feature (flow_keys.go,
// alert_channel_key.go …), and a row in that table.
var directiveKeys = []directiveKey{
	{"name", setName},
	{"retries", setRetries},
	{"backoff", setBackoff},
	{"delay", durationSetter(func(s *spec) *time.Duration { return &s.policy.Initial })},
	{"multiplier", setMultiplier},
	{"max-delay", durationSetter(func(s *spec) *time.Duration { return &s.policy.MaxDelay })},
	{"jitter", setJitter},
	{"mode", setMode},
	{"first-delay", durationSetter(func(s *spec) *time.Duration { return &s.firstDelay })},
	{"thread", setThread},
	{"timeout", durationSetter(func(s *spec) *time.Duration { return &s.policy.Timeout })},
	{"fallback", identSetter(func(s *spec) *string { return &s.fallback }, "the name of a function or method")},
	{"alert", setAlert},
	{"alert-action", identSetter(func(s *spec) *string { return &s.alertAction }, "the name of a function or method")},
	{"alert-channel", setAlertChannels}, // alert_channel_key.go
	{"shard-by", identSetter(func(s *spec) *string { return &s.shardBy }, "the name of a parameter")},
	{"unique-by", identSetter(func(s *spec) *string { return &s.uniqueBy }, "the name of a parameter")},
	// tenant-by=P: fmt.Sprint(P) is the call's tenant (runtime.GeneratedCall.Tenant).
	{"tenant-by", identSetter(func(s *spec) *string { return &s.tenantBy }, "the name of a parameter")},
	{"order-by", identSetter(func(s *spec) *string { return &s.orderBy }, "the name of a parameter")}, // order_key.go
	{"limit", setLimit}, // flow_keys.go, through retry-budget
	{"rate", setRate},
	{"burst", setBurst},
	{"breaker", setBreaker},
	{"cooldown", setCooldown},
	{"retry-budget", setRetryBudget},
}

// keyNames lists the keys' names in the table's order.
func keyNames() []string {
	names := make([]string, len(directiveKeys))
	for i, k := range directiveKeys {
		names[i] = k.name
	}
	return names
}

// setterOf returns the setter of key, or false for an unknown key.
func setterOf(key string) (func(s *spec, v string) string, bool) {
	for _, k := range directiveKeys {
		if k.name == key {
			return k.set, true
		}
	}
	return nil, false
}

// setName parses name=: the task name.
func setName(s *spec, v string) string {
	switch {
	case v == "":
		return "a task name must not be empty"
	case len(v) > 255:
		return "a task name must be at most 255 bytes (column argo_task.task_id)"
	case strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || strings.TrimSpace(v) != v:
		return "a task name must not contain control characters or start or end with a space"
	}
	s.name = v
	return ""
}

// setRetries parses retries=: the retries after the first attempt.
func setRetries(s *spec, v string) string {
	if v == "unlimited" {
		s.policy.MaxAttempts = argotype.Unlimited
		return ""
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= math.MaxInt32 {
		return "want a number of retries after the first attempt (0 or more) or unlimited"
	}
	s.policy.MaxAttempts = n + 1
	return ""
}

// setBackoff parses backoff=: the backoff kind.
func setBackoff(s *spec, v string) string {
	switch k := argotype.BackoffKind(v); k {
	case argotype.BackoffFixed, argotype.BackoffLinear, argotype.BackoffExponential:
		s.policy.Backoff = k
		return ""
	}
	return "want fixed, linear or exponential"
}

// setMultiplier parses multiplier=: the exponential backoff's growth factor.
func setMultiplier(s *spec, v string) string {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < 1 {
		return "want a number of at least 1, like 2 or 1.5"
	}
	s.policy.Multiplier = f
	return ""
}

// setJitter parses jitter=: the jitter.
func setJitter(s *spec, v string) string {
	j, err := argotype.ParseJitter(v)
	if err != nil || v == "" {
		return "want none, full, equal, a ratio like 10% or an additive duration like +300ms"
	}
	s.policy.Jitter = j
	return ""
}

// setMode parses mode=: when the first attempt runs.
func setMode(s *spec, v string) string {
	switch v {
	case "immediate":
		s.mode = argotype.Immediate
	case "schedule":
		s.mode = argotype.Scheduled
	default:
		return "want immediate or schedule"
	}
	return ""
}

// setThread parses thread=: where an immediate first attempt runs.
func setThread(s *spec, v string) string {
	switch v {
	case "async":
		s.thread = argotype.Async
	case "sync":
		s.thread = argotype.Sync
	default:
		return "want async or sync"
	}
	return ""
}

// setAlert parses alert=: the alert expression, type-checked.
func setAlert(s *spec, v string) string {
	if strings.TrimSpace(v) == "" {
		return `want a boolean expression over the task fields, like "executeTimes >= 3"`
	}
	if _, err := alertexpr.Compile(v); err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return msg
	}
	s.alert = v
	return ""
}

func durationSetter(field func(*spec) *time.Duration) func(*spec, string) string {
	return func(s *spec, v string) string {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return "want a duration like 500ms, 1s, 2m or 1h (0 or more)"
		}
		*field(s) = d
		return ""
	}
}

func identSetter(field func(*spec) *string, what string) func(*spec, string) string {
	return func(s *spec, v string) string {
		if !token.IsIdentifier(v) {
			return "want " + what
		}
		*field(s) = v
		return ""
	}
}

// suggest returns ` (did you mean "k"?)` for a known key close to key.
func suggest(key string) string {
	best, bestD := "", 3
	for _, k := range keyNames() {
		if d := editDistance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

type scanError struct {
	pos token.Pos
	msg string
}

// splitArgs splits directive arguments into key=value pairs. It follows the
// convention of (*ast.Directive).ParseArgs (space-separated bare words,
// "double-quoted" or `raw` Go strings) and also accepts a quoted value after
// the '=' (alert="executeTimes >= 3"), which ParseArgs would split at its
// spaces. base is the position of s[0]. A malformed argument is reported and
// skipped; a broken quote ends the line.
func splitArgs(s string, base token.Pos) ([]arg, []*scanError) {
	var out []arg
	var bad []*scanError
	fail := func(i int, format string, args ...any) {
		bad = append(bad, &scanError{base + token.Pos(i), fmt.Sprintf(format, args...)})
	}
	isSpace := func(i int) bool {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return unicode.IsSpace(r)
	}
	quoted := func(i int) (string, int, bool) {
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			fail(i, "unterminated or invalid quoted string")
			return "", 0, false
		}
		v, _ := strconv.Unquote(q)
		return v, len(q), true
	}
	i := 0
	for {
		for i < len(s) && isSpace(i) {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
		if i >= len(s) {
			return out, bad
		}
		start := i
		var key, value string
		ok := true
		if s[i] == '"' || s[i] == '`' {
			word, n, good := quoted(i)
			if !good {
				return out, bad
			}
			i += n
			if key, value, ok = strings.Cut(word, "="); !ok {
				fail(start, "argument %q is not key=value", word)
			}
		} else {
			j := i
			for j < len(s) && s[j] != '=' && !isSpace(j) {
				j++
			}
			key = s[i:j]
			switch {
			case j == len(s) || s[j] != '=':
				fail(start, "argument %q is not key=value", key)
				ok = false
			case j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '`'):
				v, n, good := quoted(j + 1)
				if !good {
					return out, bad
				}
				value, j = v, j+1+n
			default:
				k := j + 1
				for k < len(s) && !isSpace(k) {
					k++
				}
				value, j = s[j+1:k], k
			}
			i = j
		}
		if i < len(s) && !isSpace(i) {
			fail(i, "a quoted string must be followed by a space")
			return out, bad
		}
		if ok && key == "" {
			fail(start, "argument has no key before '='")
			ok = false
		}
		if ok {
			out = append(out, arg{key: key, value: value, pos: base + token.Pos(start)})
		}
	}
}
