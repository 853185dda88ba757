package costgate

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// An encrypted task (runtime.Config.Cipher, docs/encryption.md) costs the
// statements, round trips and commits of the same task in clear: the
// arguments are sealed before the INSERT and opened before the call, in
// memory. Both names run on one runtime whose cipher covers only one; the
// encrypted row is stored encrypted and the function gets its arguments.
func TestEncryptionCostsNoStatement(t *testing.T) {
	for _, eng := range progressEngines(t) {
		t.Run(eng.Name, func(t *testing.T) {
			args := []byte(`{"card":"4111 1111 1111 1111","amount":1250}`)
			var mu sync.Mutex
			var got [][]byte
			run := func(ctx context.Context, a []byte) error {
				mu.Lock()
				got = append(got, append([]byte(nil), a...))
				mu.Unlock()
				return nil
			}
			pol := runtime.RetryPolicy{MaxAttempts: 1, Backoff: runtime.BackoffFixed, Initial: time.Millisecond, Multiplier: 1, MaxDelay: time.Second}
			plain := &runtime.TaskDef{Name: "cost.clear", Policy: pol, Run: run}
			sealed := &runtime.TaskDef{Name: "cost.sealed", Policy: pol, Run: run}
			key := make([]byte, runtime.CipherKeySize)
			rand.Read(key)
			c := NewCounter()
			cfg, userDB, err := eng.open(c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { userDB.Close() })
			done := newDoneObserver()
			cfg.AutoMigrate, cfg.Workers, cfg.PollInterval, cfg.HeartbeatInterval = true, 1, time.Hour, time.Hour
			cfg.RescueInterval, cfg.MaintenanceInterval, cfg.LeaseDuration = time.Hour, time.Hour, 30*time.Second
			cfg.Observer, cfg.Logger = done, slog.New(slog.DiscardHandler)
			cfg.Cipher = &runtime.Cipher{Keys: []runtime.CipherKey{{ID: "k1", Key: key}}, EncryptWith: "k1", Names: []string{sealed.Name}}
			rt, err := runtime.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = rt.Stop(ctx)
			})
			if err := rt.Register(plain, sealed); err != nil {
				t.Fatal(err)
			}
			e := &env{rt: rt, userDB: userDB, c: c, done: done}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			measure := func(def *runtime.TaskDef) (Counts, int64) { return e.measureOne(t, ctx, def, args) }
			measure(plain) // warm-up: connections, caches
			measure(sealed)
			p, _ := measure(plain)
			s, id := measure(sealed)
			if s.Statements != p.Statements || s.Trips != p.Trips || s.Commits != p.Commits {
				t.Fatalf("an encrypted task cost %d statements, %d trips, %d commits; one in clear %d, %d, %d (kinds %v vs %v)", s.Statements, s.Trips, s.Commits, p.Statements, p.Trips, p.Commits, s.Kinds, p.Kinds)
			}
			row, err := rt.Inspector().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(row.Parameter, "argo:enc:v1:k1:") {
				t.Fatalf("the encrypted task's row holds %q", row.Parameter)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 4 || !bytes.Equal(got[3], args) || !bytes.Equal(got[2], args) {
				t.Fatalf("the functions got %q, want the arguments 4 times", got)
			}
			t.Logf("%d statements, %d trips, %d commits per task, encrypted or not", s.Statements, s.Trips, s.Commits)
		})
	}
}
