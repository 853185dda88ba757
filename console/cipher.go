package console

import (
	"errors"
	"fmt"

	"github.com/argo-retry/argo/runtime"
)

// arguments is the task page's arguments and the note above them: for
// arguments encrypted at rest (docs/encryption.md), decrypted with
// Options.Cipher when it holds their key, else none, the note saying
// "encrypted (key k2)" and why.
func (c *console) arguments(t *runtime.Task) (string, string) {
	key, ok := runtime.EncryptedKeyID(t.Parameter)
	if !ok {
		return prettyJSON(t.Parameter)
	}
	if key == "" {
		key = "unknown envelope"
	}
	plain, _, err := runtime.OpenArguments(t, c.opts.Cipher)
	var missing *runtime.KeyMissingError
	if errors.As(err, &missing) && missing.KeyID != "" {
		// The runtime's advice names Config.Cipher; the console's keys are
		// its own.
		return "", fmt.Sprintf("encrypted (key %s): this console does not hold key %q; to show the arguments, give it console.Options.Cipher with that key (argoctl serve: ARGO_CIPHER_KEYS)", key, missing.KeyID)
	}
	if err != nil {
		return "", fmt.Sprintf("encrypted (key %s): %v", key, err)
	}
	args, note := prettyJSON(string(plain))
	if note != "" {
		note = "; " + note
	}
	return args, fmt.Sprintf("encrypted (key %s), decrypted with the console's keys%s", key, note)
}
