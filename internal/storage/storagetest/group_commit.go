package storagetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// groupCommitCases: submits written together in one group commit
// (storage.Store.SubmitGroup, what concurrent submits reach through
// SubmitInsert), each with its own id and its own error.
func groupCommitCases() []testCase {
	return []testCase{
		{"IDsPerCaller", groupIDsPerCaller},
		{"DuplicateKeyFailsItsCallerAlone", groupDuplicateAlone},
		{"DataRefusalFailsItsCallerAlone", groupDataRefusalAlone},
		{"TokenAlreadyWritten", groupTokenWritten},
		{"ConcurrentSubmits", groupConcurrentSubmits},
	}
}

// groupTasks are n tasks named prefix, each marked by its index in
// method_sign_name, under new tokens.
func groupTasks(prefix string, n int) ([]*storage.Task, [][]byte) {
	tasks, tokens := make([]*storage.Task, n), make([][]byte, n)
	for i := range tasks {
		tasks[i] = newTask(prefix, pending, 1, i%4)
		tasks[i].MethodSignName = fmt.Sprintf("caller-%d", i)
		tokens[i] = storage.NewSubmitToken()
	}
	return tasks, tokens
}

// checkOwnRow fails unless tasks[i]'s id is the row written under its own
// token and carries its own mark.
func checkOwnRow(t *testing.T, s *storage.Store, task *storage.Task, token []byte) {
	t.Helper()
	id, err := s.SubmitTokenID(ctxFor(t), token)
	if err != nil || id == 0 || id != task.ID {
		t.Fatalf("%s was told id %d; its token's row is %d (%v)", task.MethodSignName, task.ID, id, err)
	}
	if row := get(t, s, task.ID); row.MethodSignName != task.MethodSignName {
		t.Fatalf("%s was told id %d, which holds %s", task.MethodSignName, task.ID, row.MethodSignName)
	}
}

// Every caller of a group learns the id of its own row (read back by its
// own token, not assumed consecutive), and every row is written once.
func groupIDsPerCaller(t *testing.T, e Engine) {
	s := e.Open(t)
	tasks, tokens := groupTasks("group.ids", 7)
	resolved, errs := s.SubmitGroup(ctxFor(t), tasks, tokens)
	for i, task := range tasks {
		if errs[i] != nil || resolved[i] {
			t.Fatalf("%s: resolved %v, %v; want nil without a resolution", task.MethodSignName, resolved[i], errs[i])
		}
		checkOwnRow(t, s, task, tokens[i])
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'group.ids'"); n != len(tasks) {
		t.Fatalf("%d rows, want %d", n, len(tasks))
	}
}

// A unique key already taken, in the middle of a group, and a key taken by
// an earlier caller of the same group, fail those callers alone with
// ErrDuplicate and the holder's id; their neighbours are written.
func groupDuplicateAlone(t *testing.T, e Engine) {
	s := e.Open(t)
	holder := newTask("group.dup", pending, 1, 0)
	holder.UniqueKey = nullKey("taken")
	insert(t, s, holder)

	tasks, tokens := groupTasks("group.dup", 6)
	tasks[2].UniqueKey = nullKey("taken")    // held before the group
	tasks[1].UniqueKey = nullKey("in-group") // first of two in the group
	tasks[4].UniqueKey = nullKey("in-group")
	resolved, errs := s.SubmitGroup(ctxFor(t), tasks, tokens)
	for i, task := range tasks {
		if resolved[i] {
			t.Fatalf("%s: resolved, want an answer without a resolution", task.MethodSignName)
		}
		switch i {
		case 2:
			if !errors.Is(errs[i], storage.ErrDuplicate) || task.ID != holder.ID {
				t.Fatalf("the caller with a taken key: id %d, %v; want ErrDuplicate and the holder's id %d", task.ID, errs[i], holder.ID)
			}
		case 4:
			if !errors.Is(errs[i], storage.ErrDuplicate) || task.ID != tasks[1].ID {
				t.Fatalf("the second caller with a key of the group: id %d, %v; want ErrDuplicate and the first's id %d", task.ID, errs[i], tasks[1].ID)
			}
		default:
			if errs[i] != nil {
				t.Fatalf("%s, beside a duplicate: %v, want nil", task.MethodSignName, errs[i])
			}
			checkOwnRow(t, s, task, tokens[i])
		}
	}
	for _, i := range []int{2, 4} {
		if id, err := s.SubmitTokenID(ctxFor(t), tokens[i]); err != nil || id != 0 {
			t.Fatalf("the duplicate %s has a row: %d, %v", tasks[i].MethodSignName, id, err)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'group.dup'"); n != 1+4 {
		t.Fatalf("%d rows, want the holder and the 4 callers without a duplicate", n)
	}
}

// A row refused for its data in the middle of a group fails its caller
// alone with the database's refusal; its neighbours are written.
func groupDataRefusalAlone(t *testing.T, e Engine) {
	s := e.Open(t)
	e.LimitErrorTexts(t, s, 10)
	tasks, tokens := groupTasks("group.data", 5)
	tasks[2].ErrorMsg = strings.Repeat("too long ", 10)
	_, errs := s.SubmitGroup(ctxFor(t), tasks, tokens)
	for i, task := range tasks {
		if i == 2 {
			if errs[i] == nil || errors.Is(errs[i], storage.ErrDuplicate) {
				t.Fatalf("the caller whose row is refused for its data: %v, want the refusal", errs[i])
			}
			if id, err := s.SubmitTokenID(ctxFor(t), tokens[i]); err != nil || id != 0 {
				t.Fatalf("the refused row exists: %d, %v", id, err)
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("%s, beside a refused row: %v, want nil", task.MethodSignName, errs[i])
		}
		checkOwnRow(t, s, task, tokens[i])
	}
}

// A caller of a group whose token's row exists already (its earlier INSERT
// landed, the answer was lost: what a resolution meets) is told that row's
// id and nil; no second row is written.
func groupTokenWritten(t *testing.T, e Engine) {
	s := e.Open(t)
	tasks, tokens := groupTasks("group.token", 4)
	first := *tasks[1]
	if err := s.InsertToken(ctxFor(t), nil, &first, tokens[1]); err != nil {
		t.Fatal(err)
	}
	_, errs := s.SubmitGroup(ctxFor(t), tasks, tokens)
	for i, task := range tasks {
		if errs[i] != nil {
			t.Fatalf("%s: %v, want nil", task.MethodSignName, errs[i])
		}
		checkOwnRow(t, s, task, tokens[i])
	}
	if tasks[1].ID != first.ID {
		t.Fatalf("the caller whose row existed was told id %d, want %d", tasks[1].ID, first.ID)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'group.token'"); n != len(tasks) {
		t.Fatalf("%d rows, want %d", n, len(tasks))
	}
}

// Concurrent submits through SubmitInsert (grouped where the engine groups
// them), every third with the same unique key: exactly one of those writes
// a row, the others get ErrDuplicate and its id; every other caller gets its
// own row's id.
func groupConcurrentSubmits(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const callers = 48
	tasks, tokens := groupTasks("group.concurrent", callers)
	errs := make([]error, callers)
	for i := 0; i < callers; i += 3 {
		tasks[i].UniqueKey = nullKey("shared")
	}
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.SubmitInsert(ctx, tasks[i], tokens[i])
			if errs[i] == nil {
				// Durable when answered: the row is there, under the id
				// told, the moment the caller has its answer.
				if id, err := s.SubmitTokenID(ctx, tokens[i]); err != nil || id != tasks[i].ID || id == 0 {
					errs[i] = fmt.Errorf("answered nil with id %d, but its token's row is %d (%v)", tasks[i].ID, id, err)
				}
			}
		}()
	}
	wg.Wait()
	var keyHolder int64
	for i := 0; i < callers; i += 3 {
		if errs[i] == nil {
			if keyHolder != 0 {
				t.Fatal("two submits with the same key both wrote a row")
			}
			keyHolder = tasks[i].ID
		}
	}
	for i, task := range tasks {
		switch {
		case i%3 == 0 && errs[i] != nil:
			if !errors.Is(errs[i], storage.ErrDuplicate) || task.ID != keyHolder {
				t.Fatalf("%s with the shared key: id %d, %v; want ErrDuplicate and id %d", task.MethodSignName, task.ID, errs[i], keyHolder)
			}
		case errs[i] != nil:
			t.Fatalf("%s: %v", task.MethodSignName, errs[i])
		default:
			checkOwnRow(t, s, task, tokens[i])
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_task WHERE task_id = 'group.concurrent'"); n != callers-callers/3+1 {
		t.Fatalf("%d rows, want %d", n, callers-callers/3+1)
	}
}
