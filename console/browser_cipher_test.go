package console_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestConsoleEncryptedArgumentsInBrowser: a task submitted by a runtime
// that encrypts arguments at rest (Config.Cipher, key k2) shows, on the
// page of a console that does not hold the key, "encrypted (key k2)" and
// none of its arguments, neither decrypted nor as stored. SQLite and
// MariaDB; on SQLite it writes docs/screenshots/console-task-encrypted.png
// under -update-screenshots.
func TestConsoleEncryptedArgumentsInBrowser(t *testing.T) {
	key := make([]byte, 32)
	rand.Read(key)
	cipher := &runtime.Cipher{Keys: []runtime.CipherKey{{ID: "k2", Key: key}}, EncryptWith: "k2"}
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			e := newE2E(t, b.DSN, func(c *runtime.Config) { c.Cipher = cipher })
			e.screenshots = b.Name == "sqlite"
			def := &runtime.TaskDef{Name: "payments.Refund", Policy: fixed(2), Run: func(context.Context, []byte) error {
				return runtime.Permanent(errors.New("refund API answered 409: settlement closed"))
			}}
			if err := e.rt.Register(def); err != nil {
				t.Fatal(err)
			}
			const args = `{"card":"4111 1111 1111 1111","amount_cents":1299,"order":"A-7731"}`
			id, err := e.rt.Submit(context.Background(), runtime.Call{Task: def, Args: []byte(args), Tenant: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			e.waitState(id, runtime.StateDead)
			stored, err := e.in.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(stored.Parameter, "4111") {
				t.Fatalf("task %d's arguments are stored in clear: %.60s", id, stored.Parameter)
			}

			tab := e.as("alice")
			tab.Navigate(e.taskURL(id))
			if got := tab.Text("#task-args"); got != "" {
				t.Errorf("#task-args = %q; want nothing shown without the key", got)
			}
			page := tab.Text("body")
			if !strings.Contains(page, "encrypted (key k2): this console does not hold key \"k2\"; to show the arguments, give it console.Options.Cipher with that key (argoctl serve: ARGO_CIPHER_KEYS)") {
				t.Errorf("the task page does not say the arguments are encrypted with key k2 and what shows them")
			}
			if strings.Contains(page, "4111") || strings.Contains(page, stored.Parameter[len(stored.Parameter)-24:]) {
				t.Errorf("the task page shows the arguments (decrypted or as stored)")
			}
			e.screenshot(tab, "console-task-encrypted.png")
		})
	}
}
