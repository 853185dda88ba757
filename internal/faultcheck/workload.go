package faultcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The workload: each worker process (a slot) submits a stream of
// operations, operation k of slot s drawn from a generator seeded with
// (seed, s, k) alone, so that a seed replays the same operations whatever
// the timing and however often the process was restarted (a restarted
// incarnation goes on at the first operation its predecessors had not
// begun).

// Features switch parts of the workload on. The switches named in
// KnownBreaks exercise breaks of issue #22 not fixed on every branch; they
// are off by default (DefaultFeatures) and turned on with
// -faultcheck.features or FAULTCHECK_FEATURES.
type Features map[string]bool

// The features.
const (
	FeatureBasic      = "basic"       // async, sync, scheduled, dead, fallback, retries=0, permanent, unique keys, SubmitTx committed
	FeatureTxRollback = "tx-rollback" // SubmitTx in transactions rolled back (with ordered keys on SQLite it found a rolled-back call's commit watcher claiming the next call's row, which took its id; fixed: the watcher claims by submit token)
	FeatureDeps       = "deps"        // dependency chains (Submit with After) and diamonds (SubmitGroup)
	FeatureOrder      = "order"       // ordered keys (Submit with OrderKey), keys shared by every process
	FeatureOperator   = "operator"    // operator actions at random moments: discard (also reviewed), force-fail, run-now, transient-fail, requeue, breaker open/close
	FeatureFlow       = "flow"        // a concurrency cap and a rate limit shared by every process
	FeatureOrderTx    = "order-tx"    // ordered keys written by SubmitTx inside longer transactions (#22 break 2a)
	FeatureOrderFlow  = "order-flow"  // an order key on a flow-controlled task with After or in a group, which must be refused (#22 break 4)
	FeatureBigSubmit  = "bigsubmit"   // one call a run larger than MariaDB's max_allowed_packet (16 MiB), submitted with context.Background over a connection of its own (#22 break 7); on by default on MariaDB (MariaDBOn)
	FeatureRetryAfter = "retryafter"  // first attempts answering runtime.RetryAfter (#22 breaks 6, 10)
	FeatureBudget     = "budget"      // calls under a retry budget whose first attempts are given back once per process (undecodable there), deferred by RetryAfter or failed (#22 break 6)
	// FeatureCrypt (crypt.go): arguments of some task names encrypted at rest, under two keys; the operator rekeys.
)

// AllFeatures lists every feature.
var AllFeatures = []string{FeatureBasic, FeatureFlow, FeatureOperator, FeatureTxRollback, FeatureDeps, FeatureOrder, FeatureOrderTx, FeatureOrderFlow, FeatureBigSubmit, FeatureRetryAfter, FeatureBudget, FeatureDeadlock, FeatureCrypt}

// DefaultFeatures is what make test runs: every feature whose breaks are
// fixed. The ones off by default are named in KnownBreaks with the break
// they find, or are too heavy for make test (bigsubmit).
var DefaultFeatures = []string{FeatureBasic, FeatureOrder, FeatureFlow, FeatureOperator, FeatureOrderTx, FeatureOrderFlow, FeatureRetryAfter, FeatureTxRollback, FeatureDeps, FeatureBudget, FeatureDeadlock, FeatureCrypt}

// MariaDBOn lists the features added to DefaultFeatures on a MariaDB
// server of the test's own (whose max_allowed_packet the test lowers to
// 16 MiB): bigsubmit, two big calls a run.
var MariaDBOn = []string{FeatureBigSubmit}

// GaleraOff lists the default features left out on the Galera cluster
// (KnownBreaks says what each finds there): none since argo writes through
// one node (#25, internal/failover). FeatureDeps was off there: once in about
// 40 runs one attempt of a diamond's member ran on two instances (exec-once,
// seed 84), two nodes each taking the row as writers.
var GaleraOff []string

// FixedBreaks names, for each switch turned on by default once its break of
// issue #22 was fixed, the break it found while it was not: reverting that
// fix makes make test fail on it (docs/faultcheck.md has the table).
var FixedBreaks = map[string]string{
	FeatureOrderTx:    "#22 break 2a (keyed SubmitTx in a long transaction): invariant order-overlap / order-submit",
	FeatureOrderFlow:  "#22 break 4 (an order key on a flow-controlled task accepted with After or in a group): invariant refusal",
	FeatureRetryAfter: "#22 break 10 (RetryAfter repeats attempt numbers): invariant exec-once",
	FeatureOperator:   "#22 break 5 (a task discarded while blocked and requeued loses its dependencies): the discard-blocked-requeue action, invariant deps-order",
	FeatureBudget:     "#22 break 6 (a first attempt given back counts again in its group's retry budget): invariant retry-budget",
	FeatureDeadlock:   "#22 break 3a (a dependent submit retried after a deadlock keeps the blocked state of its first try): invariant release-lost (release.go)",
	FaultPartition:    "#22 break 1 (a cut-off instance runs on): invariant attempt-overlap",
	FaultClaimCut:     "#22 break 8 (a lost claim COMMIT charges an attempt): invariant charged-unrun; with the cut matching READ COMMITTED too, terminal (a flow group's lock held by a cut session stalled the gated claim: fixed by its wait limit)",
	FeatureTxRollback: "not listed in #22: on SQLite a rolled-back SubmitTx's id is handed out again, and the rolled-back call's commit watcher claimed the new row by id, bypassing the order gate (and flow control): invariants order-overlap / order-submit",
	// On by default on MariaDB only (MariaDBOn): two 53 MiB calls a run.
	FeatureBigSubmit: "#22 break 7 (a submit larger than the server accepts hangs for ever): invariant answer (a big submit unanswered after BigAnswerWithin, or never)",
}

// KnownBreaks names, for each switch (feature or fault) off by default, the
// break it finds that is not fixed yet.
var KnownBreaks = map[string]string{}

// ParseFeatures parses a comma-separated list; "all" is every feature,
// and "+x" / "-x" add to / remove from the defaults.
func ParseFeatures(s string) (Features, error) {
	m, err := parseSwitches(s, "feature", AllFeatures, DefaultFeatures)
	return Features(m), err
}

// String lists the features that are on, sorted.
func (f Features) String() string { return switchesString(f) }

// parseSwitches parses a list of switches (features, faults) out of all:
// "" is defaults, "all" every one, "none" none, and a list beginning with
// "+x" or "-x" changes the defaults.
func parseSwitches(s, what string, all, defaults []string) (map[string]bool, error) {
	m := map[string]bool{}
	if s == "" {
		s = strings.Join(defaults, ",")
	}
	if s == "none" {
		return m, nil
	}
	parts := strings.Split(s, ",")
	if strings.HasPrefix(parts[0], "+") || strings.HasPrefix(parts[0], "-") {
		for _, d := range defaults {
			m[d] = true
		}
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		on := !strings.HasPrefix(p, "-")
		p = strings.TrimLeft(p, "+-")
		switch {
		case p == "":
		case p == "all":
			for _, a := range all {
				m[a] = on
			}
		case slices.Contains(all, p):
			m[p] = on
		default:
			return nil, fmt.Errorf("faultcheck: unknown %s %q (known: %s, all, none)", what, p, strings.Join(all, ", "))
		}
	}
	return m, nil
}

// switchesString lists the switches of m that are on, sorted.
func switchesString(m map[string]bool) string {
	var on []string
	for k, v := range m {
		if v {
			on = append(on, k)
		}
	}
	slices.Sort(on)
	return strings.Join(on, ",")
}

// Via says how a call is submitted.
const (
	ViaSubmit      = "submit"       // Runtime.Submit (the generated wrapper's path)
	ViaTxCommit    = "tx-commit"    // SubmitTx in a transaction that is committed
	ViaTxRollback  = "tx-rollback"  // SubmitTx in a transaction that is rolled back
	ViaGroup       = "group"        // one call of a SubmitGroup
	ViaUniqueAgain = "unique-again" // the previous call again, same unique key
)

// CallSpec is one call of an operation.
type CallSpec struct {
	Op       string // slot-k-i
	Task     string
	Args     Args
	Via      string
	RunAfter time.Duration // > 0: RunAt = submit time + RunAfter (a scheduled call)
	Unique   bool          // UniqueKey = Op of the first call of the operation
	OrderKey string
	After    []int // indices of earlier calls of the operation this one runs after
	// Big: the call's Blob is BigBlob bytes, submitted with
	// context.Background in a goroutine of its own, by SubmitTx on a
	// connection of its own straight to the server (not through the
	// worker's fault proxy, which takes the whole packet and hands back
	// the server's refusal 1153: the break shows only when the server
	// resets the connection mid-send).
	Big bool
	// Refuse: argo must refuse the call (ErrNotPersisted): an order key on
	// a flow-controlled task.
	Refuse bool
	// HoldTx keeps a ViaTxCommit transaction open this long after its
	// SubmitTx before committing it (order-tx).
	HoldTx time.Duration
	// Delay is how long after the previous call's answer this call is
	// submitted.
	Delay time.Duration
	// Deadlock: the submit's first try is rolled back as a deadlock
	// after its reads, and its retry waits for the upstream task to end
	// (FeatureDeadlock, MySQL family only).
	Deadlock bool
}

// Operation is what a slot does at one step: one call, or a few that go
// together (a chain, a group, a call and its unique-key retry).
type Operation struct {
	Slot, K int
	Pause   time.Duration // before the operation
	Calls   []CallSpec
}

// OrderKeys are the order keys the workload uses, shared by every slot.
var OrderKeys = []string{"fc-key-α", "fc-key-β", "fc-key-γ"}

// odd is a palette of text that databases and encoders like to alter.
var odd = []string{
	"plain ascii", "Zustellung fehlgeschlagen: ÄRGER mit dem Server", "日本語のテキスト", "emoji 🚀🔥👩‍👩‍👧",
	"combining e\u0301 vs é", "rtl \u202eabc\u202c", "nul \x00 byte", "quotes ' \" \\ ` ;--", "tab\tnew\nline\r",
	"<html>&amp;</html>", "\uFEFFbom", "ﬀ ligature", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "trailing space ",
}

// Generate returns operation k of slot under seed with features f.
func Generate(seed uint64, slot, k int, f Features) Operation {
	r := rand.New(rand.NewPCG(seed, uint64(slot)<<32|uint64(k)))
	op := Operation{Slot: slot, K: k, Pause: time.Duration(10+r.IntN(40)) * time.Millisecond}
	id := func(i int) string { return fmt.Sprintf("%d-%d-%d", slot, k, i) }
	args := func(i int) Args {
		a := Args{Op: id(i), WorkMS: workMS(r)}
		var sb strings.Builder
		for range 1 + r.IntN(4) {
			sb.WriteString(odd[r.IntN(len(odd))])
		}
		a.Text = sb.String()
		n := 16 + r.IntN(512)
		if r.IntN(20) == 0 {
			n = 8<<10 + r.IntN(40<<10) // large-ish
		}
		a.Blob = make([]byte, n)
		for j := range a.Blob {
			a.Blob[j] = byte(r.UintN(256))
		}
		if r.IntN(4) == 0 {
			a.Fail = 1 + r.IntN(2)
		}
		return a
	}
	type choice struct {
		w    int
		on   bool
		make func()
	}
	one := func(task string) CallSpec { return CallSpec{Op: id(0), Task: task, Args: args(0), Via: ViaSubmit} }
	choices := []choice{
		{30, f[FeatureBasic], func() { op.Calls = []CallSpec{one(TaskPlain)} }},
		{8, f[FeatureBasic], func() { c := one(TaskSync); op.Calls = []CallSpec{c} }},
		{8, f[FeatureBasic], func() {
			c := one(TaskPlain)
			c.RunAfter = time.Duration(100+r.IntN(2000)) * time.Millisecond
			op.Calls = []CallSpec{c}
		}},
		{4, f[FeatureBasic], func() { c := one(TaskDead); c.Args.Fail = 99; op.Calls = []CallSpec{c} }},
		{4, f[FeatureBasic], func() { c := one(TaskFallback); c.Args.Fail = 99; op.Calls = []CallSpec{c} }},
		{5, f[FeatureBasic], func() { c := one(TaskOnce); c.Args.Fail = 0; op.Calls = []CallSpec{c} }},
		{3, f[FeatureBasic], func() { c := one(TaskPlain); c.Args.Fail, c.Args.Perm = 1, true; op.Calls = []CallSpec{c} }},
		{5, f[FeatureBasic], func() {
			c := one(TaskPlain)
			c.Unique = true
			again := c
			again.Via = ViaUniqueAgain
			op.Calls = []CallSpec{c, again}
		}},
		{6, f[FeatureBasic], func() { c := one(TaskPlain); c.Via = ViaTxCommit; op.Calls = []CallSpec{c} }},
		{3, f[FeatureTxRollback], func() { c := one(TaskPlain); c.Via = ViaTxRollback; op.Calls = []CallSpec{c} }},
		{10, f[FeatureOrder], func() {
			c := one(TaskPlain)
			c.OrderKey = OrderKeys[r.IntN(len(OrderKeys))]
			c.Args.WorkMS = min(c.Args.WorkMS, 500) // one at a time per key: keep the queue short
			op.Calls = []CallSpec{c}
		}},
		{6, f[FeatureFlow], func() {
			c := one(TaskCapped)
			c.Args.WorkMS = min(c.Args.WorkMS, 1000) // 3 at a time: keep the queue short
			op.Calls = []CallSpec{c}
		}},
		{6, f[FeatureFlow], func() {
			c := one(TaskRated)
			c.Args.WorkMS = min(c.Args.WorkMS, 100)
			op.Calls = []CallSpec{c}
		}},
		{5, f[FeatureOrderTx], func() {
			c := one(TaskPlain)
			c.OrderKey = OrderKeys[r.IntN(len(OrderKeys))]
			c.Via = ViaTxCommit
			c.HoldTx = time.Duration(50+r.IntN(400)) * time.Millisecond
			op.Calls = []CallSpec{c}
		}},
		{4, f[FeatureOrderFlow], func() { // U, then D: capped, keyed, after U (or both in a group)
			group := r.IntN(2) == 0
			via := ViaSubmit
			if group {
				via = ViaGroup
			}
			u := CallSpec{Op: id(0), Task: TaskPlain, Args: args(0), Via: via}
			d := CallSpec{Op: id(1), Task: TaskCapped, Args: args(1), Via: via, OrderKey: OrderKeys[r.IntN(len(OrderKeys))], After: []int{0}, Refuse: true}
			if group {
				u.Refuse = true // the whole group is refused
			}
			op.Calls = []CallSpec{u, d}
		}},
		{5, f[FeatureBudget], func() { // under a retry budget: given back once per process, then failing once, deferred once or not
			c := one(TaskBudget)
			c.Args.GiveBack, c.Args.Perm = true, false
			c.Args.WorkMS = min(c.Args.WorkMS, 300)
			// One retry at most a call (the budget admits as many retries as
			// first attempts, plus one): no call waits for the next window.
			switch r.IntN(4) {
			case 0:
				c.Args.Fail, c.Args.RetryAfter = 1, 20+r.IntN(100)
			case 1:
				c.Args.Fail = 1
			default:
				c.Args.Fail = 0
			}
			op.Calls = []CallSpec{c}
		}},
		{5, f[FeatureRetryAfter], func() {
			c := one(TaskPlain)
			c.Args.Fail, c.Args.RetryAfter = 1+r.IntN(3), 50+r.IntN(200)
			op.Calls = []CallSpec{c}
		}},
		{8, f[FeatureDeps], func() { // a chain U → D (→ E), each by Submit with After
			n := 2 + r.IntN(2)
			for i := range n {
				c := CallSpec{Op: id(i), Task: TaskPlain, Args: args(i), Via: ViaSubmit}
				if i == 0 && r.IntN(4) == 0 {
					c.Task, c.Args.Fail = TaskDead, 99 // its dependents end skipped
				}
				if i > 0 {
					c.After = []int{i - 1}
				}
				op.Calls = append(op.Calls, c)
			}
		}},
		{3, f[FeatureDeps], func() { // a slow upstream U → D: D stays blocked for seconds (the operator's discard-blocked-requeue, #22 break 5)
			u := CallSpec{Op: id(0), Task: TaskPlain, Args: args(0), Via: ViaSubmit}
			u.Args.WorkMS, u.Args.Fail = 1500+r.IntN(1500), 0
			d := CallSpec{Op: id(1), Task: TaskPlain, Args: args(1), Via: ViaSubmit, After: []int{0}}
			op.Calls = []CallSpec{u, d}
		}},
		{6, f[FeatureDeps], func() { // U of 0–3 ms, D after U submitted 0–3 ms after U's answer: D's submit meets U's finish (#22 break 3a: a dependent submit rolled back for a deadlock against a batch of finishes and retried)
			u := CallSpec{Op: id(0), Task: TaskPlain, Args: args(0), Via: ViaSubmit}
			u.Args.WorkMS, u.Args.Fail = r.IntN(4), 0
			d := CallSpec{Op: id(1), Task: TaskPlain, Args: args(1), Via: ViaSubmit, After: []int{0}, Delay: time.Duration(r.IntN(4)) * time.Millisecond}
			d.Deadlock = f[FeatureDeadlock] && r.IntN(2) == 0
			op.Calls = []CallSpec{u, d}
		}},
		{4, f[FeatureDeps], func() { // a diamond A → B, C → D in one SubmitGroup
			for i := range 4 {
				c := CallSpec{Op: id(i), Task: TaskPlain, Args: args(i), Via: ViaGroup}
				switch i {
				case 1, 2:
					c.After = []int{0}
				case 3:
					c.After = []int{1, 2}
				}
				op.Calls = append(op.Calls, c)
			}
		}},
	}
	if f[FeatureBigSubmit] && slot == 0 && (k%400 == 2 || k%400 == 12) { // two a run (two per 400 operations of slot 0): each is some 53 MiB
		c := one(TaskPlain)
		c.Big, c.Args.Blob = true, nil // the worker fills it (BigBlob bytes)
		op.Calls = []CallSpec{c}
		return op
	}
	total := 0
	for _, c := range choices {
		if c.on {
			total += c.w
		}
	}
	if total == 0 {
		return op
	}
	x := r.IntN(total)
	for _, c := range choices {
		if !c.on {
			continue
		}
		if x < c.w {
			c.make()
			break
		}
		x -= c.w
	}
	return op
}

// BigBlob is the size of a big call's Blob: 40 MiB, 53 MiB in base64,
// more than three times MariaDB's default max_allowed_packet of 16 MiB and
// below the driver's own limit of 64 MiB (which would refuse it before
// sending): the server refuses it after its first 16 MiB and drops the
// connection while the client is still sending (#22 break 7). Whether the
// client then reads the server's 1153 or a reset is a race: the more is
// left to send, the likelier the reset (with 32 MiB one run in two read
// the 1153).
const BigBlob = 40 << 20

// BigAnswerWithin is how long a big call's submit may go unanswered: a
// row larger than the server accepts is refused at once (#22 break 7),
// whatever the context. The worker records a submit still unanswered
// then (Ev "waiting"), so that a hang is seen even if the process is
// killed afterwards.
const BigAnswerWithin = 10 * time.Second

// workMS is how long one attempt works: mostly short, some long enough that
// a kill, a Stop or a cut-off lands in the middle of it.
func workMS(r *rand.Rand) int {
	switch x := r.IntN(20); {
	case x < 14:
		return 2 + r.IntN(60)
	case x < 19:
		return 60 + r.IntN(400)
	default: // longer than a lease (2 s, the workers' default)
		return 1000 + r.IntN(5000)
	}
}
