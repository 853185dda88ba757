package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey returns 32 random bytes.
func testKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, CipherKeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// cryptArgs are arguments no plain JSON encoder would alter: nested,
// non-ASCII, escapes, a long string.
func cryptArgs(i int) []byte {
	return []byte(fmt.Sprintf(`{"order":%d,"card":"4111 1111 1111 %04d","addr":"Müllerstraße 5, 東京 \u2028","token":%q,"n":[1.5e300,-0,null,true]}`, i, i, strings.Repeat("s3cr3t", 50+i)))
}

// storedParameter reads task id's task_parameter as stored.
func storedParameter(t testing.TB, rt *Runtime, id int64) string {
	t.Helper()
	var p string
	if err := rt.DB().QueryRowContext(context.Background(), "SELECT task_parameter FROM argo_task WHERE id = ?", id).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Bad cipher configuration is refused by Start (Config validation) with a message
// saying what to do.
func TestCipherConfigRefused(t *testing.T) {
	k := make([]byte, CipherKeySize)
	cases := []struct {
		name string
		c    *Cipher
		says string
	}{
		{"no keys", &Cipher{}, "list every key"},
		{"short key", &Cipher{Keys: []CipherKey{{ID: "k1", Key: k[:16]}}}, "AES-256 needs 32 random bytes"},
		{"long key", &Cipher{Keys: []CipherKey{{ID: "k1", Key: append(k, 0)}}}, "AES-256 needs 32 random bytes"},
		{"duplicate id", &Cipher{Keys: []CipherKey{{ID: "k1", Key: k}, {ID: "k1", Key: k}}}, `"k1" listed twice`},
		{"bad id", &Cipher{Keys: []CipherKey{{ID: "k:1", Key: k}}}, "A-Z a-z 0-9 . _ -"},
		{"empty id", &Cipher{Keys: []CipherKey{{ID: "", Key: k}}}, "A-Z a-z 0-9 . _ -"},
		{"encrypt id not held", &Cipher{Keys: []CipherKey{{ID: "k1", Key: k}}, EncryptWith: "k2"}, `EncryptWith "k2" is not in Cipher.Keys (k1)`},
		{"empty name", &Cipher{Keys: []CipherKey{{ID: "k1", Key: k}}, EncryptWith: "k1", Names: []string{""}}, "empty task name"},
	}
	for _, c := range cases {
		_, err := Start(context.Background(), Config{DSN: "sqlite:" + t.TempDir() + "/x.db", AutoMigrate: true, Cipher: c.c})
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: Start: %v, want an error saying %q", c.name, err, c.says)
		}
	}
	if _, err := (Config{DSN: "sqlite:x", Cipher: &Cipher{Keys: []CipherKey{{ID: "k1", Key: k}, {ID: "k-2.b_c", Key: k}}, EncryptWith: "k-2.b_c"}}).withDefaults(); err != nil {
		t.Fatalf("a good cipher refused: %v", err)
	}
}

// seal and open: a round trip is byte-exact; the envelope names the key;
// a ciphertext altered, opened under another task name or tenant, or with
// other key bytes under the same id does not decrypt (*DecryptError); a
// key not held is a *KeyMissingError naming it; arguments in clear pass.
func TestCipherSealOpen(t *testing.T) {
	k1, k1b := testKey(t), testKey(t)
	ring, err := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k1", Key: k1}}, EncryptWith: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	plain := cryptArgs(7)
	task := &Task{Name: "crypt.unit", Tenant: "acme", Parameter: string(plain)}
	if err := ring.sealTask(task); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(task.Parameter, "argo:enc:v1:k1:") || strings.Contains(task.Parameter, "s3cr3t") {
		t.Fatalf("sealed form %q…", task.Parameter[:40])
	}
	if id, ok := EncryptedKeyID(task.Parameter); id != "k1" || !ok {
		t.Fatalf("EncryptedKeyID: %q %v", id, ok)
	}
	got, err := ring.open(task.Name, task.Tenant, task.Parameter)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q, %v; want the arguments byte for byte", got, err)
	}
	var bad *DecryptError
	// One character of the base64 body changed.
	b := []byte(task.Parameter)
	i := len("argo:enc:v1:k1:") + 20
	b[i] ^= 'A' ^ 'B'
	if b[i] == task.Parameter[i] {
		t.Fatal("tamper did not change the text")
	}
	if _, err := ring.open(task.Name, task.Tenant, string(b)); !errors.As(err, &bad) {
		t.Fatalf("tampered: %v, want *DecryptError", err)
	}
	if _, err := ring.open("crypt.other", task.Tenant, task.Parameter); !errors.As(err, &bad) {
		t.Fatalf("under another task name: %v, want *DecryptError", err)
	}
	if _, err := ring.open(task.Name, "other-tenant", task.Parameter); !errors.As(err, &bad) {
		t.Fatalf("under another tenant: %v, want *DecryptError", err)
	}
	// The key id in the envelope is authenticated: renamed, it does not decrypt.
	other, _ := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k1", Key: k1}, {ID: "k9", Key: k1}}})
	if _, err := other.open(task.Name, task.Tenant, strings.Replace(task.Parameter, ":k1:", ":k9:", 1)); !errors.As(err, &bad) {
		t.Fatalf("key id rewritten: %v, want *DecryptError", err)
	}
	wrong, _ := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k1", Key: k1b}}})
	if _, err := wrong.open(task.Name, task.Tenant, task.Parameter); !errors.As(err, &bad) || !strings.Contains(err.Error(), "key bytes differ") {
		t.Fatalf("other bytes under id k1: %v, want *DecryptError", err)
	}
	var missing *KeyMissingError
	noK1, _ := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k2", Key: k1}}})
	for _, r := range []*keyring{noK1, nil} {
		if _, err := r.open(task.Name, task.Tenant, task.Parameter); !errors.As(err, &missing) || missing.KeyID != "k1" || !strings.Contains(err.Error(), `key "k1"`) {
			t.Fatalf("key not held: %v, want *KeyMissingError for k1", err)
		}
	}
	if _, err := ring.open(task.Name, task.Tenant, "argo:enc:v7:zz"); !errors.As(err, &missing) {
		t.Fatalf("unknown envelope: %v, want *KeyMissingError", err)
	}
	if got, err := (*keyring)(nil).open(task.Name, "", `{"a":1}`); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("clear arguments: %q %v", got, err)
	}
	// Two seals of the same arguments differ (random nonce).
	t2 := &Task{Name: task.Name, Tenant: task.Tenant, Parameter: string(plain)}
	_ = ring.sealTask(t2)
	if t2.Parameter == task.Parameter {
		t.Fatal("two seals are identical: the nonce is not random")
	}
	// Clear arguments that look like an envelope are refused, with or without a cipher.
	for _, r := range []*keyring{ring, nil} {
		if err := r.sealTask(&Task{Name: "x", Parameter: "argo:enc:v1:k1:AAAA"}); err == nil || !strings.Contains(err.Error(), "store arguments as JSON") {
			t.Fatalf("clear arguments with the envelope's prefix: %v", err)
		}
	}
	// Names limits what is encrypted.
	some, _ := newKeyring(&Cipher{Keys: []CipherKey{{ID: "k1", Key: k1}}, EncryptWith: "k1", Names: []string{"crypt.a"}})
	ta, tb := &Task{Name: "crypt.a", Parameter: "{}"}, &Task{Name: "crypt.b", Parameter: "{}"}
	_ = some.sealTask(ta)
	_ = some.sealTask(tb)
	if !strings.HasPrefix(ta.Parameter, EncryptedPrefix) || tb.Parameter != "{}" {
		t.Fatalf("Names [crypt.a]: a %q, b %q", ta.Parameter, tb.Parameter)
	}
}

// Every submit path stores the arguments encrypted and every run gets them
// back byte for byte: Submit (async and sync), scheduled (RunAt),
// SubmitTx, SubmitGroup with an edge, After; a fallback gets them; a
// requeued dead task (the requeue copies the ciphertext) runs with them.
// The unique key, tenant and order key stay in clear and usable.
func TestCipherRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		var mu sync.Mutex
		got := map[string][]byte{} // marker -> arguments received
		gotFallback := map[string][]byte{}
		failOnce := map[string]bool{}
		record := func(m map[string][]byte, args []byte) string {
			var key string
			if i := bytes.Index(args, []byte(`"order":`)); i >= 0 {
				key = string(args[i : i+bytes.IndexByte(args[i:], ',')])
			}
			mu.Lock()
			m[key] = append([]byte(nil), args...)
			mu.Unlock()
			return key
		}
		def := &TaskDef{Name: "crypt.rt", Policy: fastPolicy(2), Run: func(ctx context.Context, args []byte) error {
			key := record(got, args)
			mu.Lock()
			fail := key == `"order":9` && !failOnce[key]
			failOnce[key] = failOnce[key] || fail
			mu.Unlock()
			if fail {
				return Permanent(errors.New("refused once"))
			}
			if key == `"order":8` {
				return Permanent(errors.New("to the fallback"))
			}
			return nil
		}, Fallback: func(ctx context.Context, args []byte, cause error) error {
			record(gotFallback, args)
			if bytes.Contains(args, []byte(`"order":9,`)) {
				return errors.New("dead")
			}
			return nil
		}}
		syncDef := &TaskDef{Name: "crypt.sync", Thread: Sync, Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
			record(got, args)
			return nil
		}}
		cfg := testConfigT(t, dsn)
		cfg.Cipher = &Cipher{Keys: []CipherKey{{ID: "k1", Key: testKey(t)}}, EncryptWith: "k1"}
		rt := startRuntime(t, cfg)
		for _, d := range []*TaskDef{def, syncDef} {
			if err := rt.Register(d); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string][]byte{}
		var ids []int64
		submit := func(i int, fn func(args []byte) (int64, error)) {
			args := cryptArgs(i)
			want[fmt.Sprintf(`"order":%d`, i)] = args
			id, err := fn(args)
			if err != nil {
				t.Fatalf("submit %d: %v", i, err)
			}
			ids = append(ids, id)
		}
		submit(1, func(a []byte) (int64, error) {
			return rt.Submit(ctx, Call{Task: def, Args: a, UniqueKey: "uk-1", Tenant: "acme", OrderKey: "ok-1"})
		})
		submit(2, func(a []byte) (int64, error) { return rt.Submit(ctx, Call{Task: syncDef, Args: a}) })
		submit(3, func(a []byte) (int64, error) {
			return rt.Submit(ctx, Call{Task: def, Args: a, RunAt: time.Now().Add(300 * time.Millisecond)})
		})
		submit(4, func(a []byte) (int64, error) {
			tx, err := rt.DB().BeginTx(ctx, nil)
			if err != nil {
				return 0, err
			}
			id, err := rt.SubmitTx(ctx, tx, Call{Task: def, Args: a, Tenant: "acme"})
			if err != nil {
				tx.Rollback()
				return 0, err
			}
			return id, tx.Commit()
		})
		want[`"order":5`], want[`"order":6`] = cryptArgs(5), cryptArgs(6)
		gids, err := rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: def, Args: cryptArgs(5)}}, {Call: Call{Task: def, Args: cryptArgs(6), Tenant: "beta"}, AfterCalls: []int{0}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, gids...)
		submit(7, func(a []byte) (int64, error) {
			return rt.Submit(ctx, Call{Task: def, Args: a, After: []int64{gids[1]}})
		})
		submit(8, func(a []byte) (int64, error) { return rt.Submit(ctx, Call{Task: def, Args: a}) })
		submit(9, func(a []byte) (int64, error) { return rt.Submit(ctx, Call{Task: def, Args: a}) })
		dead := ids[len(ids)-1]
		for _, id := range ids {
			p := storedParameter(t, rt, id)
			if !strings.HasPrefix(p, "argo:enc:v1:k1:") || strings.Contains(p, "s3cr3t") || strings.Contains(p, "order") {
				t.Fatalf("task %d stored %q…: want the envelope of key k1, no clear text", id, p[:min(len(p), 60)])
			}
		}
		// The unique key is in clear and still refuses a duplicate.
		if dup, err := rt.Submit(ctx, Call{Task: def, Args: cryptArgs(1), UniqueKey: "uk-1"}); !errors.Is(err, ErrDuplicate) || dup != ids[0] {
			t.Fatalf("duplicate unique key: %d, %v; want %d and ErrDuplicate", dup, err, ids[0])
		}
		first, err := rt.Inspector().Get(ctx, ids[0])
		if err != nil || first.Tenant != "acme" || first.OrderKey.String != "ok-1" || first.UniqueKey.String != "uk-1" {
			t.Fatalf("keys of task 1: %+v %v; want tenant, order and unique keys in clear", first, err)
		}
		waitState(t, rt, dead, StateDead, 20*time.Second)
		if err := rt.Inspector().Requeue(ctx, dead); err != nil {
			t.Fatal(err)
		}
		links, err := rt.Inspector().Links(ctx, dead)
		if err != nil || links.To == 0 {
			t.Fatalf("requeue links %+v %v", links, err)
		}
		waitState(t, rt, links.To, StateSucceeded, 20*time.Second)
		for _, id := range ids[:len(ids)-2] {
			waitState(t, rt, id, StateSucceeded, 20*time.Second)
		}
		waitState(t, rt, ids[len(ids)-2], StateRecovered, 20*time.Second)
		mu.Lock()
		defer mu.Unlock()
		for k, w := range want {
			if !bytes.Equal(got[k], w) {
				t.Errorf("%s: the function got %q, want %q", k, got[k], w)
			}
		}
		for _, k := range []string{`"order":8`, `"order":9`} {
			if !bytes.Equal(gotFallback[k], want[k]) {
				t.Errorf("%s: the fallback got %q, want %q", k, gotFallback[k], want[k])
			}
		}
	})
}

// waitUndecodable waits until task id is given back with an error naming
// what, then checks it waits: pending, no attempt charged, none recorded.
func waitUndecodable(t *testing.T, rt *Runtime, id int64, what string) *Task {
	t.Helper()
	var task *Task
	waitFor(t, 20*time.Second, "the task given back with "+what, func() bool {
		var err error
		task, err = rt.Inspector().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(task.ErrorMsg, what)
	})
	// Given back at least twice: it keeps waiting, never charged.
	first := task.GmtModified
	waitFor(t, 20*time.Second, "a second give-back", func() bool {
		task, _ = rt.Inspector().Get(context.Background(), id)
		return task.GmtModified != first && task.State == StatePending
	})
	if task.State != StatePending || task.ExecuteTimes != 0 {
		t.Fatalf("task %d: %s, %d attempts charged; want pending, none", id, task.State, task.ExecuteTimes)
	}
	hist, err := rt.Inspector().Attempts(context.Background(), id)
	if err != nil || len(hist) != 0 {
		t.Fatalf("history %+v %v; want no attempt recorded", hist, err)
	}
	return task
}

// Rotation k1 -> k2: rows under k1, then rows under k2 written by an
// instance holding both; a dry run counts and changes nothing; rekey
// rewrites the k1 rows under k2 (a second run finds nothing to do); an
// instance holding only k2 runs every task with its arguments byte for
// byte. Before the rekey, an instance holding only k2 leaves a k1 task
// waiting (pending, no attempt charged, its error naming the key) and its
// fallback too (exhausted, not run), and neither function is called.
func TestCipherRotation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		k1, k2 := CipherKey{ID: "k1", Key: testKey(t)}, CipherKey{ID: "k2", Key: testKey(t)}
		// Submitters that claim nothing of these names.
		cfgA := testConfigT(t, dsn)
		cfgA.TaskNames = []string{"crypt.none"}
		cfgA.Cipher = &Cipher{Keys: []CipherKey{k1}, EncryptWith: "k1"}
		a := startRuntime(t, cfgA)
		cfgA2 := cfgA
		cfgA2.InstanceID = cfgA.InstanceID + "-2"
		cfgA2.Cipher = &Cipher{Keys: []CipherKey{k1, k2}, EncryptWith: "k2"}
		a2 := startRuntime(t, cfgA2)
		var mu sync.Mutex
		got := map[int64][]byte{}
		var fallbacks int
		def := &TaskDef{Name: "crypt.rot", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			id, _, _ := AttemptFrom(ctx)
			mu.Lock()
			got[id] = append([]byte(nil), args...)
			mu.Unlock()
			return nil
		}, Fallback: func(ctx context.Context, args []byte, cause error) error {
			mu.Lock()
			fallbacks++
			mu.Unlock()
			return nil
		}}
		want := map[int64][]byte{}
		var underK1 []int64
		for i := range 6 {
			sub := a
			if i%2 == 1 {
				sub = a2
			}
			id, err := sub.Submit(ctx, Call{Task: def, Args: cryptArgs(i), Tenant: fmt.Sprintf("t%d", i%3)})
			if err != nil {
				t.Fatal(err)
			}
			want[id] = cryptArgs(i)
			if sub == a {
				underK1 = append(underK1, id)
			}
		}
		// One k1 task already exhausted: its fallback is due.
		exhausted := underK1[0]
		if _, err := a.DB().ExecContext(ctx, "UPDATE argo_task SET task_status = 4, execute_times = 3, error_msg = 'boom' WHERE id = ?", exhausted); err != nil {
			t.Fatal(err)
		}
		// B holds only k2: the k1 tasks wait, visibly.
		cfgB := testConfigT(t, dsn)
		cfgB.Cipher = &Cipher{Keys: []CipherKey{k2}, EncryptWith: "k2"}
		b := startRuntime(t, cfgB)
		if err := b.Register(def); err != nil {
			t.Fatal(err)
		}
		waiting := waitUndecodable(t, b, underK1[1], `key "k1", which this process does not hold`)
		if !strings.Contains(waiting.ErrorMsg, "add that key to Config.Cipher.Keys") {
			t.Fatalf("error_msg %q does not say what to do", waiting.ErrorMsg)
		}
		waitFor(t, 20*time.Second, "the exhausted k1 task's fallback refused", func() bool {
			task, _ := b.Inspector().Get(ctx, exhausted)
			return task.State == StateExhausted && strings.Contains(task.FallbackErrorMsg, `key "k1"`)
		})
		for id := range want {
			if !slicesContains(underK1, id) {
				waitState(t, b, id, StateSucceeded, 20*time.Second)
			}
		}
		mu.Lock()
		for _, id := range underK1 {
			if got[id] != nil {
				t.Fatalf("task %d under k1 ran on an instance without k1", id)
			}
		}
		if fallbacks != 0 {
			t.Fatalf("the fallback ran without its key")
		}
		mu.Unlock()

		in := a2.Inspector()
		both := &Cipher{Keys: []CipherKey{k1, k2}, EncryptWith: "k2"}
		dry, err := in.Rekey(ctx, both, RekeyOptions{DryRun: true, Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		if dry.Rekeyed != len(underK1) || dry.Encrypted["k1"] != len(underK1) || dry.Remaining() != len(underK1) {
			t.Fatalf("dry run: %s; want %d under k1 to rekey", dry, len(underK1))
		}
		for _, id := range underK1 {
			if k, _ := EncryptedKeyID(storedParameter(t, a, id)); k != "k1" {
				t.Fatalf("the dry run changed task %d (now key %q)", id, k)
			}
		}
		// Without the encryption key, or without k1, rekey says what it needs.
		if _, err := in.Rekey(ctx, &Cipher{Keys: []CipherKey{k1, k2}}, RekeyOptions{}); err == nil || !strings.Contains(err.Error(), "EncryptWith") {
			t.Fatalf("rekey without an encryption key: %v", err)
		}
		only2, err := in.Rekey(ctx, &Cipher{Keys: []CipherKey{k2}, EncryptWith: "k2"}, RekeyOptions{Batch: 4})
		if err != nil || only2.Unreadable["k1"] != len(underK1) || only2.Rekeyed != 0 || only2.Remaining() != len(underK1) {
			t.Fatalf("rekey without k1: %s, %v; want the k1 rows unreadable, none rekeyed", only2, err)
		}
		rep, err := in.Rekey(ctx, both, RekeyOptions{Batch: 2})
		if err != nil || rep.Rekeyed != len(underK1) || rep.Remaining() != 0 {
			t.Fatalf("rekey: %s, %v; want %d rekeyed, none remaining", rep, err, len(underK1))
		}
		again, err := in.Rekey(ctx, both, RekeyOptions{})
		if err != nil || again.Rekeyed != 0 || again.Current != len(want) {
			t.Fatalf("second rekey: %s %v; want nothing to do, %d current", again, err, len(want))
		}
		// k1 removed everywhere: B runs them all, byte for byte, fallback included.
		for _, id := range underK1[1:] {
			waitState(t, b, id, StateSucceeded, 20*time.Second)
		}
		waitState(t, b, exhausted, StateRecovered, 20*time.Second)
		mu.Lock()
		defer mu.Unlock()
		for id, w := range want {
			if id == exhausted {
				continue
			}
			if !bytes.Equal(got[id], w) {
				t.Errorf("task %d got %q, want %q", id, got[id], w)
			}
		}
		if fallbacks != 1 {
			t.Fatalf("fallbacks %d, want 1", fallbacks)
		}
	})
}

func slicesContains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A wrong key (other bytes under the same id), a tampered ciphertext and a
// ciphertext copied to another tenant's row: each task waits, its error
// saying the arguments do not decrypt; the function is not called. The
// task that waited for the wrong key runs once an instance holds the
// right one.
func TestCipherWrongKeyAndTampered(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfgA := testConfigT(t, dsn)
		cfgA.TaskNames = []string{"crypt.none"}
		cfgA.Cipher = &Cipher{Keys: []CipherKey{{ID: "k1", Key: testKey(t)}}, EncryptWith: "k1"}
		a := startRuntime(t, cfgA)
		var mu sync.Mutex
		ran := map[int64]int{}
		def := &TaskDef{Name: "crypt.bad", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
			id, _, _ := AttemptFrom(ctx)
			mu.Lock()
			ran[id]++
			mu.Unlock()
			return nil
		}}
		wrongID, err := a.Submit(ctx, Call{Task: def, Args: cryptArgs(1)})
		if err != nil {
			t.Fatal(err)
		}
		// B holds other bytes under id k1.
		cfgB := testConfigT(t, dsn)
		cfgB.Cipher = &Cipher{Keys: []CipherKey{{ID: "k1", Key: testKey(t)}}, EncryptWith: "k1"}
		b := startRuntime(t, cfgB)
		if err := b.Register(def); err != nil {
			t.Fatal(err)
		}
		waitUndecodable(t, b, wrongID, `key "k1" do not decrypt`)
		b.Stop(ctx)

		// Tampered, and copied to another tenant: A's key, in an instance that runs.
		cfgC := testConfigT(t, dsn)
		cfgC.Cipher = cfgA.Cipher
		tamperID, err := a.Submit(ctx, Call{Task: def, Args: cryptArgs(2), Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		copyID, err := a.Submit(ctx, Call{Task: def, Args: cryptArgs(3), Tenant: "beta"})
		if err != nil {
			t.Fatal(err)
		}
		orig := storedParameter(t, a, tamperID)
		p := []byte(orig)
		p[len(p)-10] ^= 'A' ^ 'B'
		if _, err := a.DB().ExecContext(ctx, "UPDATE argo_task SET task_parameter = ? WHERE id = ?", string(p), tamperID); err != nil {
			t.Fatal(err)
		}
		// The acme task's intact ciphertext, on the beta task's row.
		if _, err := a.DB().ExecContext(ctx, "UPDATE argo_task SET task_parameter = ? WHERE id = ?", orig, copyID); err != nil {
			t.Fatal(err)
		}
		c := startRuntime(t, cfgC)
		if err := c.Register(def); err != nil {
			t.Fatal(err)
		}
		waitUndecodable(t, c, tamperID, "altered")
		waitUndecodable(t, c, copyID, "altered or copied")
		// The first task runs where its key is held.
		waitState(t, c, wrongID, StateSucceeded, 20*time.Second)
		mu.Lock()
		defer mu.Unlock()
		if ran[tamperID]+ran[copyID] != 0 {
			t.Fatalf("the function ran with arguments that do not decrypt: %v", ran)
		}
	})
}

// A rekey while an attempt runs rewrites the running row's arguments and
// nothing else (state, lease owner, attempt stay); the attempt, which has
// its arguments already, ends succeeded and its outcome lands.
func TestCipherRekeyRunningRow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		k1, k2 := CipherKey{ID: "k1", Key: testKey(t)}, CipherKey{ID: "k2", Key: testKey(t)}
		cfg := testConfigT(t, dsn)
		cfg.Cipher = &Cipher{Keys: []CipherKey{k1, k2}, EncryptWith: "k1"}
		rt := startRuntime(t, cfg)
		started, release := make(chan []byte, 1), make(chan struct{})
		def := &TaskDef{Name: "crypt.running", Policy: fastPolicy(1), Run: func(ctx context.Context, args []byte) error {
			started <- append([]byte(nil), args...)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(ctx, Call{Task: def, Args: cryptArgs(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got := receive(t, started, 20*time.Second, "the attempt to start"); !bytes.Equal(got, cryptArgs(1)) {
			t.Fatalf("the attempt got %q", got)
		}
		before, err := rt.Inspector().Get(ctx, id)
		if err != nil || before.State != StateRunning {
			t.Fatalf("before the rekey: %+v %v", before, err)
		}
		rep, err := rt.Inspector().Rekey(ctx, &Cipher{Keys: []CipherKey{k1, k2}, EncryptWith: "k2"}, RekeyOptions{})
		if err != nil || rep.Rekeyed != 1 || rep.Remaining() != 0 {
			t.Fatalf("rekey: %s %v", rep, err)
		}
		after, err := rt.Inspector().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := EncryptedKeyID(after.Parameter); k != "k2" || after.State != StateRunning || after.LeaseOwner != before.LeaseOwner || after.ExecuteTimes != before.ExecuteTimes || after.GmtModified != before.GmtModified {
			t.Fatalf("running row after the rekey: key %q %s owner %q attempt %d modified %d; before: %s owner %q attempt %d modified %d",
				k, after.State, after.LeaseOwner, after.ExecuteTimes, after.GmtModified, before.State, before.LeaseOwner, before.ExecuteTimes, before.GmtModified)
		}
		close(release)
		waitState(t, rt, id, StateSucceeded, 20*time.Second)
	})
}
