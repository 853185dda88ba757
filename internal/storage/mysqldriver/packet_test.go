package mysqldriver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// A submit whose row is larger than the server's max_allowed_packet, sent
// because the Store's read of the limit is stale (the server's limit was
// lowered since), breaks the connection or is refused every time it is
// run: it is settled at once as a refusal (RowTooLargeError, which says
// the size and the limit), with context.Background(), and no row exists.
// The resolution of a lost answer reads the limit again and resolves by
// reading the token, never by re-running the INSERT for ever.
func TestOversizedSubmitWithStaleLimit(t *testing.T) {
	s := openStore(t, testdb.MySQLDSN(t), false)
	ctx := context.Background()
	var limit int64
	if err := s.DB().QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		run  func(task *storage.Task, token []byte) error
	}{
		{"SubmitInsert", func(task *storage.Task, token []byte) error {
			_, err := s.SubmitInsert(ctx, task, token)
			return err
		}},
		{"ResolveInsert", func(task *storage.Task, token []byte) error {
			return s.ResolveInsert(ctx, task, token, errors.New("the first run's answer was lost"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.SetPacketLimit(1 << 40) // a stale read: the row "fits"
			task := &storage.Task{Name: "oversized." + c.name, State: storage.StatePending, MaxAttempts: 1,
				Parameter: `{"S":"` + strings.Repeat("s", 2*int(limit)) + `"}`}
			token := storage.NewSubmitToken()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- c.run(task, token) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatalf("%s of a %d-byte row (max_allowed_packet %d) with context.Background() has not returned after 60 s", c.name, len(task.Parameter), limit)
			}
			var tl *storage.RowTooLargeError
			if !errors.As(err, &tl) || tl.Limit != limit || !storage.IsLastingRefusal(err) || !storage.OutcomeKnown(err) {
				t.Fatalf("%s of a %d-byte row (max_allowed_packet %d): %v after %v, want a lasting RowTooLargeError naming the limit", c.name, len(task.Parameter), limit, err, time.Since(start))
			}
			id, err := s.SubmitTokenID(ctx, token)
			if err != nil || id != 0 {
				t.Fatalf("the refused submit's row: id %d, %v; want none", id, err)
			}
		})
	}
}
