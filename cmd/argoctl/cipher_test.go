package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestShowEncryptedAndRekey: show says "encrypted (key k1)" without the
// key and shows the arguments with it ($ARGO_CIPHER_KEYS), as a table and
// as JSON; rekey refuses to run without keys or a target, counts with
// --dry-run and changes nothing, then moves every row to k2, after which
// show decrypts them with k2 alone.
func TestShowEncryptedAndRekey(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			k1, k2 := make([]byte, 32), make([]byte, 32)
			rand.Read(k1)
			rand.Read(k2)
			keys := func(ks ...string) map[string]string {
				return map[string]string{"ARGO_CIPHER_KEYS": strings.Join(ks, ",")}
			}
			key1, key2 := "k1:"+base64.StdEncoding.EncodeToString(k1), "k2:"+base64.StdEncoding.EncodeToString(k2)
			rt, err := runtime.Start(ctx, runtime.Config{DSN: b.DSN, AutoMigrate: true, TaskNames: []string{"none"},
				Cipher: &runtime.Cipher{Keys: []runtime.CipherKey{{ID: "k1", Key: k1}}, EncryptWith: "k1"}})
			if err != nil {
				t.Fatal(err)
			}
			def := &runtime.TaskDef{Name: "crypt.ctl", Run: func(context.Context, []byte) error { return nil }}
			var ids []string
			for i := range 2 {
				id, err := rt.Submit(ctx, runtime.Call{Task: def, Args: []byte(`{"card":"4111-` + strconv.Itoa(i) + `"}`)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, strconv.FormatInt(id, 10))
			}
			rt.Stop(ctx)

			out := mustCtl(t, b.DSN, "show", ids[0])
			if !strings.Contains(out, "encrypted (key k1): arguments encrypted with key \"k1\", which this process does not hold") || strings.Contains(out, "4111") {
				t.Fatalf("show without the key:\n%s", out)
			}
			var j struct {
				Arguments json.RawMessage `json:"arguments"`
				Raw       *string         `json:"raw_arguments"`
				Encrypted *struct {
					Key       string `json:"key"`
					Decrypted bool   `json:"decrypted"`
				} `json:"encrypted"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", ids[0], "-o", "json")), &j); err != nil || j.Encrypted == nil || j.Encrypted.Key != "k1" || j.Encrypted.Decrypted || j.Arguments != nil || j.Raw != nil {
				t.Fatalf("show -o json without the key: %+v %v", j, err)
			}
			out, errOut, code := ctlEnv(t, b.DSN, keys(key1), "show", ids[0])
			if code != 0 || !strings.Contains(out, "encrypted (key k1), decrypted with $ARGO_CIPHER_KEYS") || !strings.Contains(out, `"card": "4111-0"`) {
				t.Fatalf("show with the key: %d %s\n%s", code, errOut, out)
			}

			if _, errOut, code := ctlEnv(t, b.DSN, nil, "rekey", "-to", "k2"); code != 2 || !strings.Contains(errOut, "ARGO_CIPHER_KEYS") {
				t.Fatalf("rekey without keys: %d %s", code, errOut)
			}
			if _, errOut, code := ctlEnv(t, b.DSN, keys(key1, key2), "rekey"); code != 2 || !strings.Contains(errOut, "-to KEYID") {
				t.Fatalf("rekey without -to: %d %s", code, errOut)
			}
			if _, errOut, code := ctlEnv(t, b.DSN, keys(key1), "rekey", "-to", "k2"); code != 1 || !strings.Contains(errOut, `EncryptWith "k2" is not in Cipher.Keys`) {
				t.Fatalf("rekey to a key not held: %d %s", code, errOut)
			}
			out, errOut, code = ctlEnv(t, b.DSN, keys(key1, key2), "rekey", "-to", "k2", "--dry-run")
			if code != 0 || !strings.Contains(out, "would rekey 2") || !strings.Contains(out, "2 rows to rekey") {
				t.Fatalf("rekey --dry-run: %d %s\n%s", code, errOut, out)
			}
			if out := mustCtl(t, b.DSN, "show", ids[1]); !strings.Contains(out, "encrypted (key k1)") {
				t.Fatalf("the dry run changed a row:\n%s", out)
			}
			out, errOut, code = ctlEnv(t, b.DSN, keys(key1, key2), "rekey", "-to", "k2", "-batch", "1")
			if code != 0 || !strings.Contains(out, "rekeyed 2") || !strings.Contains(out, "may be removed") {
				t.Fatalf("rekey: %d %s\n%s", code, errOut, out)
			}
			out, errOut, code = ctlEnv(t, b.DSN, keys(key2), "show", ids[1])
			if code != 0 || !strings.Contains(out, "encrypted (key k2), decrypted") || !strings.Contains(out, `"card": "4111-1"`) {
				t.Fatalf("show with k2 after the rekey: %d %s\n%s", code, errOut, out)
			}
		})
	}
}
