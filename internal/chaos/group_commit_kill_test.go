package chaos

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// groupKillRounds is how many times the group-commit kill test SIGKILLs the
// submitting process; groupKillAfter the answers it waits for before each kill.
const (
	groupKillRounds = 3
	groupKillAfter  = 1500
)

// TestGroupCommitKill9 SIGKILLs, three times, a process whose 16 goroutines
// submit without pause on an SQLite file (so that groups of submits are
// always in flight, written together in one transaction), every 7th call
// reusing the previous call's unique key (an error inside a group). After
// each kill it checks the database against what the callers were told
// (their fsynced answer log): every call that returned nil has its row,
// under the id it was told, with its own arguments; every call that
// returned an error (ErrDuplicate, ErrNotPersisted) has no row of its own.
func TestGroupCommitKill9(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "groupsubmitter")
	build := exec.Command("go", "build", "-o", bin, "./groupsubmitter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./groupsubmitter: %v\n%s", err, out)
	}
	dsn := testdb.SQLiteDSN(t)
	var logs []string
	for round := range groupKillRounds {
		logPath := filepath.Join(dir, fmt.Sprintf("answers.%d", round))
		logs = append(logs, logPath)
		stderr, err := os.Create(filepath.Join(dir, fmt.Sprintf("stderr.%d", round)))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-dsn", dsn, "-log", logPath, "-prefix", fmt.Sprintf("r%d", round))
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.Now().Add(60 * time.Second)
		for countLines(t, logPath) < groupKillAfter {
			select {
			case err := <-exited:
				out, _ := os.ReadFile(stderr.Name())
				t.Fatalf("round %d: the submitter exited by itself (%v) before %d answers:\n%s", round, err, groupKillAfter, out)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				<-exited
				t.Fatalf("round %d: fewer than %d answers logged after 60s", round, groupKillAfter)
			}
		}
		if err := cmd.Process.Signal(os.Kill); err != nil {
			t.Fatal(err)
		}
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the submitter still runs 30s after SIGKILL", round)
		}
		stderr.Close()
		checkGroupAnswers(t, dsn, logs)
	}
}

// countLines counts the complete lines of path (0 if it does not exist yet).
func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// checkGroupAnswers checks the database against every answer logged so far.
func checkGroupAnswers(t *testing.T, dsn string, logs []string) {
	t.Helper()
	db, _, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type row struct {
		id  int64
		key sql.NullString
	}
	byArgs := map[string]row{} // "<prefix> <n>" → its row
	ids := map[int64]bool{}
	rows, err := db.Query("SELECT id, task_parameter, unique_key FROM argo_task")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		var param string
		if err := rows.Scan(&r.id, &param, &r.key); err != nil {
			t.Fatal(err)
		}
		var args struct{ N int64 }
		if err := json.Unmarshal([]byte(param), &args); err != nil {
			t.Fatalf("row %d: arguments %q: %v", r.id, param, err)
		}
		prefix, _, _ := strings.Cut(r.key.String, "-")
		byArgs[fmt.Sprintf("%s %d", prefix, args.N)] = r
		ids[r.id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var ok, dup, failed int
	for round, path := range logs {
		prefix := fmt.Sprintf("r%d", round)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) != 3 {
				continue // the last line, cut short by the kill
			}
			n, _ := strconv.ParseInt(fields[1], 10, 64)
			own, has := byArgs[fmt.Sprintf("%s %d", prefix, n)]
			switch fields[0] {
			case "ok":
				ok++
				id, _ := strconv.ParseInt(fields[2], 10, 64)
				if !has || own.id != id {
					t.Fatalf("%s call %d returned nil with id %d, but its row is %v (found %v): a returned submit is not durable", prefix, n, id, own.id, has)
				}
			case "dup":
				dup++
				id, _ := strconv.ParseInt(fields[2], 10, 64)
				if has {
					t.Fatalf("%s call %d returned ErrDuplicate, yet its own row %d exists", prefix, n, own.id)
				}
				if !ids[id] {
					t.Fatalf("%s call %d returned ErrDuplicate with id %d, which is no row", prefix, n, id)
				}
			case "err":
				failed++
				if fields[2] == "not-persisted" && has {
					t.Fatalf("%s call %d returned ErrNotPersisted, yet its row %d exists", prefix, n, own.id)
				}
			}
		}
		f.Close()
	}
	if ok == 0 || dup == 0 {
		t.Fatalf("answers checked: %d nil, %d duplicates, %d other errors; want some of both nil and duplicates", ok, dup, failed)
	}
	t.Logf("after %d kills: %d nil answers with their rows, %d duplicates and %d other errors without, %d rows", len(logs), ok, dup, failed, len(ids))
}
