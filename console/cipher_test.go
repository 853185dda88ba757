package console_test

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// The task page of a task whose arguments are encrypted says "encrypted
// (key k2)" and shows none of them without the key; with Options.Cipher
// holding it, it shows them decrypted and says so (page and JSON API).
func TestTaskPageEncryptedArguments(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	key := make([]byte, 32)
	rand.Read(key)
	c := &runtime.Cipher{Keys: []runtime.CipherKey{{ID: "k2", Key: key}}, EncryptWith: "k2"}
	sealed, err := runtime.SealArguments(c, "crypt.Page", "acme", []byte(`{"card":"4111-secret"}`))
	if err != nil {
		t.Fatal(err)
	}
	const id = 9001
	e.insert(seedRow{id: id, name: "crypt.Page", state: runtime.StatePending, max: 3, tenant: "acme", params: sealed, modified: -time.Minute})

	page := get(t, e.handler(console.Options{}), "/tasks/9001")
	if !strings.Contains(page, "encrypted (key k2)") || strings.Contains(page, "4111-secret") || strings.Contains(page, sealed[20:60]) {
		t.Fatalf("task page without the key: want \"encrypted (key k2)\" and no arguments")
	}
	api := get(t, e.handler(console.Options{}), "/api/tasks/9001.json")
	if !strings.Contains(api, `"args_note":"encrypted (key k2)`) || strings.Contains(api, "4111") {
		t.Fatalf("API without the key: %s", api)
	}
	page = get(t, e.handler(console.Options{Cipher: c}), "/tasks/9001")
	if !strings.Contains(page, "encrypted (key k2), decrypted with the console&#39;s keys") || !strings.Contains(page, "4111-secret") {
		t.Fatalf("task page with the key: want the arguments decrypted")
	}
}
