package storagetest

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/storage"
)

// dataCases: values an engine may refuse for their data (MySQL in strict
// mode refuses a text too long for its column, bytes that are not UTF-8,
// a character its charset lacks, where SQLite stores them as they are).
// argo sanitises the texts it writes, degrades a finish refused for its
// data, and otherwise gets a refusal it can report: never a value stored
// altered without a trace.
func dataCases() []testCase {
	return []testCase{
		{"ErrorTextsSanitised", dataErrorTextsSanitised},
		{"FourByteCharacters", dataFourByteCharacters},
		{"UniqueKeyAtAndOverLimit", dataUniqueKeyLimit},
		{"ValuesRefusedOrStoredWhole", dataRefusedOrWhole},
		{"DataErrorDegrades", dataErrorDegrades},
		{"NarrowCharsetDegrades", dataNarrowCharset},
	}
}

// poisonTexts are error texts MySQL in strict mode refuses as they are
// (1406 data too long, 1366 incorrect string value) or that SQLite's text
// functions mishandle (NUL), each with the head it must be stored with.
var poisonTexts = []struct {
	name, text, storedHead string
}{
	{"100KiB", strings.Repeat("x", 100<<10), strings.Repeat("x", 1000)},
	{"invalid UTF-8 ff fe", "bad \xff\xfe bytes", `bad \xff\xfe bytes`},
	{"lone c3", "cut \xc3", `cut \xc3`},
	{"bf 27", "quote \xbf' DROP TABLE x; --", `quote \xbf' DROP TABLE x; --`},
	{"NUL", "nul \x00 inside", `nul \x00 inside`},
	{"100KiB invalid", "héad " + strings.Repeat("\xff", 100<<10), `héad \xff\xff`},
	{"4-byte characters", "smile 🙂 𝄞 end", "smile 🙂 𝄞 end"},
}

// checkStoredText fails unless got is what argo may store for a text that
// starts with head: valid UTF-8 without NUL, within MaxErrorTextBytes.
func checkStoredText(t *testing.T, what, got, head string) {
	t.Helper()
	if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || len(got) > storage.MaxErrorTextBytes {
		t.Fatalf("%s: stored %d bytes, valid UTF-8 %v, NUL at %d; want valid UTF-8 without NUL within %d bytes", what, len(got), utf8.ValidString(got), strings.IndexByte(got, 0), storage.MaxErrorTextBytes)
	}
	if !strings.HasPrefix(got, head) {
		t.Fatalf("%s: stored text starts %s, want %s", what, short(got), short(head))
	}
}

// checkTaskTexts checks a task's state, its error_msg and the error of its
// last history row.
func checkTaskTexts(t *testing.T, s *storage.Store, what string, id int64, want storage.State, head string) {
	t.Helper()
	row := get(t, s, id)
	if row.State != want {
		t.Fatalf("%s: state %s, want %s", what, row.State, want)
	}
	checkStoredText(t, what+" error_msg", row.ErrorMsg, head)
	atts := attempts(t, s, id)
	if len(atts) == 0 {
		t.Fatalf("%s: no history", what)
	}
	checkStoredText(t, what+" history error_msg", atts[len(atts)-1].Error, head)
}

// Every error text argo writes (insert, finish, batch, fallback, rescue) is
// stored valid UTF-8 without NUL within MaxErrorTextBytes, starting with
// the text as given (bad bytes escaped as \xNN, a long text cut with a
// marker), on every engine: nothing refused, nothing lost silently.
func dataErrorTextsSanitised(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for _, p := range poisonTexts {
		in := newTask("poison", pending, 1, 0)
		in.ErrorMsg, in.FallbackErrorMsg, in.DiscardReason = p.text, p.text, p.text
		insert(t, s, in)
		row := get(t, s, in.ID)
		checkStoredText(t, p.name+" insert error_msg", row.ErrorMsg, p.storedHead)
		checkStoredText(t, p.name+" insert fallback_error_msg", row.FallbackErrorMsg, p.storedHead)
		checkStoredText(t, p.name+" insert discard_reason", row.DiscardReason, p.storedHead)

		// A lone failure (task row and history), then a batch of a
		// fallback's failure and a plain failure.
		a, b, c := newTask("poison", pending, 1, 0), newTask("poison", pending, 1, 0), newTask("poison", pending, 1, 0)
		insert(t, s, a, b, c)
		if err := s.Finish(ctx, failure(claimByID(t, s, a.ID, "me", 5, 100_000), retrying, 50, p.text), 30); err != nil {
			t.Fatalf("%s: finish: %v", p.name, err)
		}
		checkTaskTexts(t, s, p.name+" finish", a.ID, retrying, p.storedHead)

		if err := s.Finish(ctx, failure(claimByID(t, s, b.ID, "me", 5, 100_000), exhausted, 50, "exhausted"), 30); err != nil {
			t.Fatalf("%s: finish: %v", p.name, err)
		}
		fb, err := s.ClaimByID(ctx, b.ID, b.ShardKey, exhausted, "me", 60, 100_000)
		if err != nil || fb == nil {
			t.Fatalf("claim of the fallback: %v, %v", fb, err)
		}
		text := p.text
		fbFail := storage.Finishing{Fence: fenceOf(fb), To: dead, Due: 70, FallbackErr: &text,
			History: &storage.Attempt{TaskPK: b.ID, Attempt: fb.ExecuteTimes, Kind: "fallback", Worker: "me", StartedAt: 60, FinishedAt: 70, Outcome: outcomeFailed, Error: text}}
		errs, err := s.FinishBatch(ctx, []storage.Finishing{fbFail, failure(claimByID(t, s, c.ID, "me", 5, 100_000), retrying, 50, p.text)}, 80)
		if err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("%s: batch: %v, %v", p.name, errs, err)
		}
		deadRow := get(t, s, b.ID)
		if deadRow.State != dead {
			t.Fatalf("%s: fallback finish: %s", p.name, deadRow.State)
		}
		checkStoredText(t, p.name+" fallback_error_msg", deadRow.FallbackErrorMsg, p.storedHead)
		checkTaskTexts(t, s, p.name+" batch", c.ID, retrying, p.storedHead)

		// A rescue of an expired lease with the text.
		d := newTask("poison", pending, 1, 0)
		insert(t, s, d)
		dc := claimByID(t, s, d.ID, "me", 5, 100)
		rf := failure(dc, retrying, 50, p.text)
		rf.History.Outcome = outcomeLeaseExpired
		if err := s.Rescue(ctx, rf, dc.LeaseUntil, 200); err != nil {
			t.Fatalf("%s: rescue: %v", p.name, err)
		}
		checkTaskTexts(t, s, p.name+" rescue", d.ID, retrying, p.storedHead)
	}
}

// 4-byte UTF-8 characters are stored unaltered in every text column argo
// writes, including the task name at its limit of 255 characters (1,020
// bytes) and a unique key.
func dataFourByteCharacters(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	name := strings.Repeat("🙂", 255)
	in := newTask(name, pending, 1, 0)
	in.Parameter = `{"s":"𝄞 🙂"}`
	in.MethodName, in.ErrorMsg, in.DiscardReason = "F🙂", "err 🙂", "why 🙂"
	in.UniqueKey = nullKey("key 🙂")
	insert(t, s, in)
	if got := get(t, s, in.ID); *got != *in {
		t.Fatalf("4-byte characters not stored as written:\n got %+v\nwant %+v", got, in)
	}
	c := claimByID(t, s, in.ID, "me", 5, 1000)
	if err := s.Finish(ctx, failure(c, retrying, 50, "failed: 🙂 𝄞"), 30); err != nil {
		t.Fatal(err)
	}
	if row, atts := get(t, s, in.ID), attempts(t, s, in.ID); row.ErrorMsg != "failed: 🙂 𝄞" || len(atts) != 1 || atts[0].Error != "failed: 🙂 𝄞" {
		t.Fatalf("4-byte error text stored as %q and %+v", row.ErrorMsg, atts)
	}
	if names, err := s.TaskNames(ctx); err != nil || len(names) != 1 || names[0] != name {
		t.Fatalf("TaskNames = %v, %v", names, err)
	}
}

// A unique key of 255 bytes is stored byte for byte on every engine. One of
// 256 bytes is refused by an engine that enforces column sizes, with an
// error naming the column that the driver classes as a data error (so a
// submit reports it at once instead of resolving it), and nothing written;
// an engine that does not stores it whole. Either way nothing is cut.
func dataUniqueKeyLimit(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	at := newTask("key", pending, 1, 0)
	at.UniqueKey = nullKey(strings.Repeat("k", 254) + "\xff")
	insert(t, s, at)
	if got := get(t, s, at.ID); got.UniqueKey != at.UniqueKey {
		t.Fatalf("255-byte key stored as %d bytes", len(got.UniqueKey.String))
	}
	over := newTask("key", pending, 1, 0)
	over.UniqueKey, over.MethodSignName = nullKey(strings.Repeat("o", 256)), "over"
	resolved, err := s.SubmitInsert(ctx, over, storage.NewSubmitToken())
	checkRefusedOrWhole(t, e, s, "256-byte unique key", "unique_key", err, over, func(got *storage.Task) bool { return got.UniqueKey == over.UniqueKey })
	if resolved {
		t.Fatal("256-byte key: the submit went into a resolution; a refusal for its data is an answer")
	}
}

// checkRefusedOrWhole checks the outcome of writing task (marked by a
// method_sign_name of its own), whose value for column an engine enforcing
// column sizes refuses: refused (err a data error naming the column, no
// row) on such an engine, else written with the value whole (same reports
// whether the stored row has it).
func checkRefusedOrWhole(t *testing.T, e Engine, s *storage.Store, what, column string, err error, task *storage.Task, same func(*storage.Task) bool) {
	t.Helper()
	if e.RefusesOversizedValues {
		if err == nil {
			t.Fatalf("%s: stored (id %d) by an engine that refuses it", what, task.ID)
		}
		if !s.Driver().IsDataError(err) || !s.Driver().OutcomeKnown(err) || !strings.Contains(err.Error(), column) {
			t.Fatalf("%s: %v; want a refusal for its data naming %s (data error %v, outcome known %v)", what, err, column, s.Driver().IsDataError(err), s.Driver().OutcomeKnown(err))
		}
		if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE method_sign_name = ?", task.MethodSignName); n != 0 {
			t.Fatalf("%s: refused, yet %d rows written", what, n)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, want it stored whole on an engine without column sizes", what, err)
	}
	if !same(get(t, s, task.ID)) {
		t.Fatalf("%s: stored altered", what)
	}
}

// Values argo passes through as given (a task name, arguments, a method
// name) that an engine enforcing column sizes and UTF-8 refuses are
// refused there with an error naming the column, and stored whole
// elsewhere; a NUL byte in the arguments is stored as it is everywhere.
func dataRefusedOrWhole(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	for i, c := range []struct {
		what, column string
		set          func(*storage.Task)
		same         func(got, want *storage.Task) bool
	}{
		{"task name of 256 characters", "task_id",
			func(task *storage.Task) { task.Name = strings.Repeat("n", 256) },
			func(got, want *storage.Task) bool { return got.Name == want.Name }},
		{"arguments not UTF-8", "task_parameter",
			func(task *storage.Task) { task.Parameter = "{\"b\":\"\xff\xfe\"}" },
			func(got, want *storage.Task) bool { return got.Parameter == want.Parameter }},
		{"method name of 256 characters", "method_name",
			func(task *storage.Task) { task.MethodName = strings.Repeat("m", 256) },
			func(got, want *storage.Task) bool { return got.MethodName == want.MethodName }},
	} {
		task := newTask("v", pending, 1, 0)
		task.MethodSignName = fmt.Sprintf("case %d", i)
		c.set(task)
		err := s.Insert(ctx, nil, task)
		checkRefusedOrWhole(t, e, s, c.what, c.column, err, task, func(got *storage.Task) bool { return c.same(got, task) })
	}
	nul := newTask("v", pending, 1, 0)
	nul.Parameter = "{\"n\":\"a\x00b\"}"
	insert(t, s, nul)
	if got := get(t, s, nul.ID); got.Parameter != nul.Parameter {
		t.Fatalf("arguments with a NUL byte stored as %q", got.Parameter)
	}
}

// logBuffer collects a Store's log, safe for concurrent writers.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLog sends s's log to a new logBuffer.
func captureLog(s *storage.Store) *logBuffer {
	var logs logBuffer
	s.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	return &logs
}

// refusedTextHead starts the text written in place of one refused.
const refusedTextHead = "argo: error text refused by the database ("

// A finish or rescue refused for its data (an error column smaller than
// argo's) is logged at ERROR naming the task and lands with its texts
// replaced by a short ASCII note, alone and in a batch (where the other
// finishes keep their texts); one refused even then fails at once with
// ErrDataRefused, and writes nothing.
func dataErrorDegrades(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	logs := captureLog(s)
	e.LimitErrorTexts(t, s, 255)
	long, fine := strings.Repeat("L", 1000), "short"
	a, b, c, r := newTask("p", pending, 1, 0), newTask("p", pending, 1, 0), newTask("p", pending, 1, 0), newTask("p", pending, 1, 0)
	insert(t, s, a, b, c, r)
	if err := s.Finish(ctx, failure(claimByID(t, s, a.ID, "me", 5, 100_000), retrying, 50, long), 30); err != nil {
		t.Fatalf("finish: %v", err)
	}
	errs, err := s.FinishBatch(ctx, []storage.Finishing{
		failure(claimByID(t, s, b.ID, "me", 5, 100_000), retrying, 50, long),
		failure(claimByID(t, s, c.ID, "me", 5, 100_000), retrying, 50, fine),
	}, 30)
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v, %v", errs, err)
	}
	rc := claimByID(t, s, r.ID, "me", 5, 100)
	rf := failure(rc, retrying, 50, long)
	rf.History.Outcome = outcomeLeaseExpired
	if err := s.Rescue(ctx, rf, rc.LeaseUntil, 200); err != nil {
		t.Fatalf("rescue: %v", err)
	}
	for _, id := range []int64{a.ID, b.ID, r.ID} {
		checkTaskTexts(t, s, "degraded", id, retrying, refusedTextHead)
		if msg := get(t, s, id).ErrorMsg; len(msg) > 255 || strings.ContainsFunc(msg, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			t.Fatalf("replacement text %q: want ASCII within 255 bytes", msg)
		}
	}
	checkTaskTexts(t, s, "batch neighbour", c.ID, retrying, fine)
	if n := strings.Count(logs.String(), `level=ERROR msg="argo: the database refused a finish for its data`); n != 2 {
		t.Fatalf("%d ERROR logs of a refused finish, want 2:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="argo: the database refused a lease rescue for its data`) {
		t.Fatalf("no ERROR log of the refused rescue:\n%s", logs.String())
	}
	for _, id := range []int64{a.ID, b.ID, r.ID} {
		if !strings.Contains(logs.String(), fmt.Sprintf("task_id=%d ", id)) {
			t.Fatalf("the ERROR log does not name task %d:\n%s", id, logs.String())
		}
	}

	// Too small even for the replacement: refused at once, nothing written.
	exec(t, s, "DELETE FROM argo_task_attempt")
	exec(t, s, "DELETE FROM argo_task")
	e.LimitErrorTexts(t, s, 10)
	d := newTask("p", pending, 1, 0)
	insert(t, s, d)
	dc := claimByID(t, s, d.ID, "me", 5, 100_000)
	start := time.Now()
	err = s.Finish(ctx, failure(dc, retrying, 50, long), 30)
	if !errors.Is(err, storage.ErrDataRefused) {
		t.Fatalf("finish into a 10-character column: %v, want storage.ErrDataRefused", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the refused finish took %s", took)
	}
	if row := get(t, s, d.ID); *row != *dc {
		t.Fatalf("the refused finish changed the row:\n got %+v\nwant %+v", row, dc)
	}
	if atts := attempts(t, s, d.ID); len(atts) != 0 {
		t.Fatalf("the refused finish wrote history %+v", atts)
	}
}

// On an engine with column charsets, an error column whose charset lacks
// 4-byte characters refuses a text with one; the finish degrades to the
// ASCII note rather than fail or store the text cut.
func dataNarrowCharset(t *testing.T, e Engine) {
	if e.NarrowErrorTextCharset == nil {
		t.Skip("this engine has no column charsets: a 4-byte character is stored whole (FourByteCharacters)")
	}
	s := e.Open(t)
	ctx := ctxFor(t)
	logs := captureLog(s)
	e.NarrowErrorTextCharset(t, s)
	task := newTask("p", pending, 1, 0)
	insert(t, s, task)
	if err := s.Finish(ctx, failure(claimByID(t, s, task.ID, "me", 5, 100_000), retrying, 50, "smile 🙂"), 30); err != nil {
		t.Fatalf("finish: %v", err)
	}
	checkTaskTexts(t, s, "narrow charset", task.ID, retrying, refusedTextHead)
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("no ERROR log of the refused finish:\n%s", logs.String())
	}
}
