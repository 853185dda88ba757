package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// serverPacketLimit reads the server's max_allowed_packet.
func serverPacketLimit(t *testing.T, rt *Runtime) int {
	t.Helper()
	var limit int
	if err := dbx(rt.store).GetContext(context.Background(), &limit, "SELECT @@max_allowed_packet"); err != nil {
		t.Fatal(err)
	}
	return limit
}

// oversizedArgs are the arguments: a string and a []byte of limit
// bytes each (16 MiB each under MariaDB's default max_allowed_packet), as
// a generated wrapper encodes them, with marker m.
func oversizedArgs(t *testing.T, m string, limit int) []byte {
	t.Helper()
	args, err := json.Marshal(struct {
		M string
		S string
		B []byte
	}{m, strings.Repeat("s", limit), make([]byte, limit)})
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// within runs call in its own goroutine and fails the test if it has not
// returned within d (a submit that hangs is the break, so the test must
// not hang with it).
func within(t *testing.T, d time.Duration, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s with context.Background() has not returned after %v", what, d)
		return nil
	}
}

// A submit whose arguments are larger than the server accepts in one
// packet (max_allowed_packet) is a refusal that will never change: every
// submit path returns ErrNotPersisted at once, with context.Background(),
// saying the size and the limit, and no row exists afterwards. Both with
// the driver's own packet limit (64 MiB, larger than the server's: the
// server drops the connection mid-send) and with the server's limit known
// to the client (maxAllowedPacket=0: the server refuses the parameter).
func TestOversizedSubmitIsRefusedAtOnce(t *testing.T) {
	for _, clientLimit := range []string{"driver-default", "server's"} {
		t.Run("client-limit="+clientLimit, func(t *testing.T) {
			dsn := testdb.MySQLDSN(t)
			if clientLimit == "server's" {
				dsn += map[bool]string{true: "&", false: "?"}[strings.Contains(dsn, "?")] + "maxAllowedPacket=0"
			}
			rt := startRuntime(t, testConfigT(t, dsn))
			def := &TaskDef{Name: "oversized", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error { return nil }}
			if err := rt.Register(def); err != nil {
				t.Fatal(err)
			}
			limit := serverPacketLimit(t, rt)
			ctx := context.Background()
			paths := []struct {
				name   string
				submit func(args []byte) error
			}{
				{"Submit", func(args []byte) error {
					_, err := rt.Submit(ctx, Call{Task: def, Args: args})
					return err
				}},
				{"SubmitGroup", func(args []byte) error {
					_, err := rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: def, Args: markerArgs("group-neighbour")}}, {Call: Call{Task: def, Args: args}}})
					return err
				}},
				{"SubmitTx(tx)", func(args []byte) error {
					tx, err := rt.DB().BeginTx(ctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback()
					if _, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: args}); err != nil {
						return err
					}
					return tx.Commit()
				}},
				{"SubmitTx(db)", func(args []byte) error {
					_, err := rt.SubmitTx(ctx, rt.DB(), Call{Task: def, Args: args})
					return err
				}},
			}
			for _, p := range paths {
				t.Run(p.name, func(t *testing.T) {
					m := "big-" + p.name
					args := oversizedArgs(t, m, limit)
					start := time.Now()
					err := within(t, 60*time.Second, p.name, func() error { return p.submit(args) })
					took := time.Since(start)
					if !errors.Is(err, ErrNotPersisted) {
						t.Fatalf("%s of %d bytes of arguments (max_allowed_packet %d): %v after %v, want ErrNotPersisted", p.name, len(args), limit, err, took)
					}
					for _, want := range []string{strconv.Itoa(len(args)), strconv.Itoa(limit), "max_allowed_packet"} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q does not say %q (the size, the limit, what to do)", err, want)
						}
					}
					if took > 5*time.Second {
						t.Errorf("refused after %v, want at once", took)
					}
					var n int
					if err := dbx(rt.store).GetContext(ctx, &n, "SELECT COUNT(*) FROM argo_task WHERE task_parameter LIKE ?", fmt.Sprintf(`{"M":%q,%%`, m)); err != nil {
						t.Fatal(err)
					}
					if n != 0 {
						t.Fatalf("%d rows for a submit refused as not persisted", n)
					}
				})
			}
			// The runtime still works afterwards.
			if _, err := rt.Submit(ctx, Call{Task: def, Args: markerArgs("small")}); err != nil {
				t.Fatalf("a small submit after the refusals: %v", err)
			}
		})
	}
}

// A submit whose INSERT loses its answer every time it is run (the row
// was written by the first run; each run again meets it and loses its
// answer too) is not re-run for ever under context.Background(): after a
// bounded number of broken runs the resolution reads the row by its token
// and returns nil. The row runs once, as attempt 1.
func TestSubmitWhoseEveryRunLosesItsAnswer(t *testing.T) {
	rt, proxy := proxiedRuntime(t, nil)
	var log runLog
	def := &TaskDef{Name: "every.run.lost", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
		log.add(ctx, args)
		return nil
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	proxy.CutAnswer("INSERT INTO argo_task (", 1000)
	var id int64
	err := within(t, 60*time.Second, "Submit", func() error {
		var err error
		id, err = rt.Submit(context.Background(), Call{Task: def, Args: markerArgs("every")})
		return err
	})
	cuts := proxy.Cuts()
	if err != nil || id == 0 {
		t.Fatalf("Submit whose every INSERT lost its answer: id %d, %v after %d lost answers; want the row's id, nil", id, err, cuts)
	}
	if cuts < 2 {
		t.Fatalf("%d answers lost, want the first run's and the resolution's", cuts)
	}
	if n := rowsWithMarker(t, rt, "every"); n != 1 {
		t.Fatalf("%d rows for the submit, want 1", n)
	}
	task := waitSucceeded(t, rt, id, 20*time.Second)
	if got := log.get("every"); len(got) != 1 || got[0] != 1 || task.ExecuteTimes != 1 {
		t.Fatalf("runs %v, execute_times %d: want one run, attempt 1", got, task.ExecuteTimes)
	}
}
