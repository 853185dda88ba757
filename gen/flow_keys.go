package gen

import (
	"fmt"
	"go/token"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// The flow-control keys (docs/flow-control.md): limit=[GROUP:]N,
// rate=[GROUP:]N/UNIT, burst=N, breaker=[GROUP:]N/WINDOW or
// [GROUP:]P%/WINDOW, cooldown=DURATION, retry-budget=[GROUP:]P%/WINDOW.
// They become TaskDef.Flow.

// flowSpec is what the flow keys of one directive declare.
type flowSpec struct {
	group       string // "" = the task's name
	groupKey    string // the key that named the group first
	limit       int
	rate        float64
	burst       int
	failures    int
	ratio       float64
	window      time.Duration
	cooldown    time.Duration
	hasBreaker  bool
	declaredAny bool
	// retry-budget=: the share of first attempts and its window.
	budgetShare  float64
	budgetWindow time.Duration
}

// flowKeys lists the flow-control keys, in documentation order.
var flowKeys = []string{"limit", "rate", "burst", "breaker", "cooldown", "retry-budget"}

// setLimit parses limit=[GROUP:]N.
func setLimit(s *spec, v string) string {
	g, n, msg := splitGroup(s, "limit", v)
	if msg != "" {
		return msg
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 1 || limit >= math.MaxInt32 {
		return "want [GROUP:]N, the most attempts running at once across instances (1 or more), like printer:4"
	}
	s.flow.limit = limit
	return s.flow.setGroup("limit", g)
}

// setRate parses rate=[GROUP:]N/UNIT.
func setRate(s *spec, v string) string {
	g, r, msg := splitGroup(s, "rate", v)
	if msg != "" {
		return msg
	}
	const want = "want [GROUP:]N/UNIT, attempts started per second, minute or hour across instances, like printer:50/s or 100/m"
	num, unit, ok := strings.Cut(r, "/")
	if !ok {
		return want
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return want
	}
	switch unit {
	case "s":
	case "m":
		n /= 60
	case "h":
		n /= 3600
	default:
		return want
	}
	s.flow.rate = n
	return s.flow.setGroup("rate", g)
}

// setBurst parses burst=N.
func setBurst(s *spec, v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n >= math.MaxInt32 {
		return "want the attempts that may start at once after a quiet spell (1 or more)"
	}
	s.flow.burst = n
	s.flow.declaredAny = true
	return ""
}

// setBreaker parses breaker=[GROUP:]N/WINDOW or [GROUP:]P%/WINDOW.
func setBreaker(s *spec, v string) string {
	g, b, msg := splitGroup(s, "breaker", v)
	if msg != "" {
		return msg
	}
	const want = "want [GROUP:]N/WINDOW (N failed attempts within WINDOW open it) or [GROUP:]P%/WINDOW (a failure ratio), like printer:5/30s or printer:50%/1m"
	th, win, ok := strings.Cut(b, "/")
	if !ok {
		return want
	}
	w, err := time.ParseDuration(win)
	if err != nil || w <= 0 {
		return want
	}
	if pct, isPct := strings.CutSuffix(th, "%"); isPct {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || p <= 0 || p > 100 {
			return want
		}
		s.flow.ratio = p / 100
	} else {
		n, err := strconv.Atoi(th)
		if err != nil || n < 1 || n >= math.MaxInt32 {
			return want
		}
		s.flow.failures = n
	}
	s.flow.window, s.flow.hasBreaker = w, true
	return s.flow.setGroup("breaker", g)
}

// setCooldown parses cooldown=DURATION.
func setCooldown(s *spec, v string) string {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return "want the breaker's first cool-down, a duration like 10s or 1m (more than 0)"
	}
	s.flow.cooldown = d
	return ""
}

// setRetryBudget parses retry-budget=[GROUP:]P%/WINDOW.
func setRetryBudget(s *spec, v string) string {
	g, b, msg := splitGroup(s, "retry-budget", v)
	if msg != "" {
		return msg
	}
	const want = "want [GROUP:]P%/WINDOW, retries at most P% of the first attempts started within WINDOW across instances, like printer:20%/1m"
	share, win, ok := strings.Cut(b, "/")
	pct, isPct := strings.CutSuffix(share, "%")
	if !ok || !isPct {
		return want
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil || p <= 0 || p > 100 {
		return want
	}
	w, err := time.ParseDuration(win)
	if err != nil || w < time.Millisecond {
		return want
	}
	s.flow.budgetShare, s.flow.budgetWindow = p/100, w
	return s.flow.setGroup("retry-budget", g)
}

// splitGroup splits "GROUP:VALUE" (or "VALUE") at its last colon and
// checks the group's name.
func splitGroup(s *spec, key, v string) (group, value, msg string) {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return "", v, ""
	}
	group, value = v[:i], v[i+1:]
	switch {
	case group == "":
		return "", "", "the group name before ':' is empty; leave out 'GROUP:' for a group of this task alone"
	case len(group) > 255:
		return "", "", "a group name must be at most 255 bytes (column argo_flow.group_name)"
	case strings.IndexFunc(group, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		return "", "", "a group name must not contain spaces or control characters"
	}
	return group, value, ""
}

// setGroup records that key named group ("" names none).
func (f *flowSpec) setGroup(key, group string) string {
	f.declaredAny = true
	if group == "" {
		return ""
	}
	if f.group != "" && f.group != group {
		return fmt.Sprintf("group %q differs from group %q named by %s=: one task belongs to one group", group, f.group, f.groupKey)
	}
	f.group, f.groupKey = group, key
	return ""
}

// crossCheckFlow reports flow keys that need another.
func (s *spec) crossCheckFlow(e *errs) {
	if p, ok := s.pos["burst"]; ok && s.pos["rate"] == token.NoPos {
		e.at(p, "burst: requires rate=[GROUP:]N/UNIT")
	}
	if p, ok := s.pos["cooldown"]; ok && s.pos["breaker"] == token.NoPos {
		e.at(p, "cooldown: requires breaker=[GROUP:]N/WINDOW")
	}
}

// flowGroupOf is the group a task's flow keys put it in.
func flowGroupOf(t *task) string {
	if t.spec.flow.group != "" {
		return t.spec.flow.group
	}
	return t.name
}

// crossFlow reports tasks of one group that declare it with other values.
func (c *checker) crossFlow() {
	byGroup := map[string]*task{}
	for _, t := range c.tasks {
		f := t.spec.flow
		if !f.declaredAny {
			continue
		}
		g := flowGroupOf(t)
		first, seen := byGroup[g]
		if !seen {
			byGroup[g] = t
			continue
		}
		a, b := first.spec.flow, f
		a.groupKey, b.groupKey = "", ""
		if a != b {
			pos := t.spec.slash
			for _, k := range flowKeys {
				if p, ok := t.spec.pos[k]; ok {
					pos = p
					break
				}
			}
			c.at(pos, "%s: flow group %s is declared with other values by %s at %s; give every task of a group the same limit, rate, burst, breaker, cooldown and retry-budget", t.display(), g, first.display(), c.shortPos(first.decl.Name.Pos()))
		}
	}
}

// flowDef renders TaskDef.Flow, or nil when no flow key is set.
func (e *emitter) flowDef(t *task) jen.Code {
	f := t.spec.flow
	if !f.declaredAny {
		return nil
	}
	var pairs []jen.Code
	if f.group != "" {
		pairs = append(pairs, kv("Group", jen.Lit(f.group)))
	}
	if f.limit > 0 {
		pairs = append(pairs, kv("Limit", jen.Lit(f.limit)))
	}
	if f.rate > 0 {
		pairs = append(pairs, kv("Rate", jen.Lit(f.rate)))
	}
	if f.burst > 0 {
		pairs = append(pairs, kv("Burst", jen.Lit(f.burst)))
	}
	if f.hasBreaker {
		var bp []jen.Code
		if f.failures > 0 {
			bp = append(bp, kv("Failures", jen.Lit(f.failures)))
		}
		if f.ratio > 0 {
			bp = append(bp, kv("Ratio", jen.Lit(f.ratio)))
		}
		bp = append(bp, kv("Window", duration(f.window)))
		if f.cooldown > 0 {
			bp = append(bp, kv("Cooldown", duration(f.cooldown)))
		}
		pairs = append(pairs, kv("Breaker", jen.Op("&").Add(e.rt("Breaker")).Add(fields(bp...))))
	}
	if f.budgetShare > 0 {
		pairs = append(pairs, kv("RetryBudget", jen.Op("&").Add(e.rt("RetryBudget")).Add(fields(
			kv("Share", jen.Lit(f.budgetShare)), kv("Window", duration(f.budgetWindow))))))
	}
	return jen.Op("&").Add(e.rt("FlowControl")).Add(fields(pairs...))
}
