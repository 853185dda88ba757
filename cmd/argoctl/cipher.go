package main

// Arguments encrypted at rest (docs/encryption.md): argoctl holds the keys
// of $ARGO_CIPHER_KEYS (ID:BASE64KEY,…), shows the arguments it can
// decrypt and says "encrypted (key k2)" for the others, and rekey
// re-encrypts rows under the key -to (default $ARGO_CIPHER_ENCRYPT_WITH).
//
//	ARGO_CIPHER_KEYS=k1:…,k2:… argoctl rekey -to k2 --dry-run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/argo-retry/argo/runtime"
)

// cipher is the keyring of $ARGO_CIPHER_KEYS, encrypting with encryptWith;
// nil when none is set.
func (g *globals) cipher(encryptWith string) (*runtime.Cipher, error) {
	keys, err := runtime.ParseCipherKeys(g.cipherKeys)
	if err != nil {
		return nil, fmt.Errorf("ARGO_CIPHER_KEYS: %w", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return &runtime.Cipher{Keys: keys, EncryptWith: encryptWith}, nil
}

// encryptedJSON is what show -o json says of encrypted arguments.
type encryptedJSON struct {
	Key       string `json:"key"`
	Decrypted bool   `json:"decrypted"`       // arguments holds them in clear
	Error     string `json:"error,omitempty"` // why they were not decrypted
}

// opened returns t's arguments decrypted with argoctl's keys, the key id,
// and why they could not be ("" when decrypted). ok is false for
// arguments in clear.
func opened(e *env, t *runtime.Task) (plain []byte, key, why string, ok bool) {
	key, ok = runtime.EncryptedKeyID(t.Parameter)
	if !ok {
		return nil, "", "", false
	}
	c, err := e.g.cipher("")
	if err != nil {
		return nil, key, err.Error(), true
	}
	plain, _, err = runtime.OpenArguments(t, c)
	if err != nil {
		return nil, key, oneLine(err), true
	}
	return plain, key, "", true
}

// writeEncrypted writes the arguments of show when they are encrypted:
// decrypted, if argoctl holds the key, under a line naming it; else
// "encrypted (key k2)" and why. It reports whether they were encrypted.
func writeEncrypted(e *env, t *runtime.Task) bool {
	plain, key, why, ok := opened(e, t)
	if !ok {
		return false
	}
	label := key
	if label == "" {
		label = "unknown envelope"
	}
	if why != "" {
		fmt.Fprintf(e.stdout, "  encrypted (key %s): %s\n", label, why)
		return true
	}
	fmt.Fprintf(e.stdout, "  encrypted (key %s), decrypted with $ARGO_CIPHER_KEYS:\n", label)
	if j, err := json.MarshalIndent(json.RawMessage(plain), "  ", "  "); err == nil {
		fmt.Fprintf(e.stdout, "  %s\n", j)
	} else {
		fmt.Fprintf(e.stdout, "  (not JSON) %q\n", plain)
	}
	return true
}

// encrypted fills show -o json's encrypted member and, when argoctl holds
// the key, the arguments in clear.
func (j *taskJSON) encrypted(e *env, t *runtime.Task) {
	plain, key, why, ok := opened(e, t)
	if !ok {
		return
	}
	j.Encrypted = &encryptedJSON{Key: key, Decrypted: why == "", Error: why}
	j.Arguments, j.RawArguments = nil, nil
	if why == "" {
		if json.Valid(plain) {
			j.Arguments = json.RawMessage(plain)
		} else {
			s := string(plain)
			j.RawArguments = &s
		}
	}
}

func cmdRekey(e *env, args []string) error {
	fs := newFlagSet("rekey")
	to := fs.String("to", e.g.cipherEncryptWith, "key id to re-encrypt with (default $ARGO_CIPHER_ENCRYPT_WITH)")
	batch := fs.Int("batch", runtime.RekeyBatchDefault, "rows read by one statement and rewritten by one transaction")
	dry := fs.Bool("dry-run", false, "count the rows by key, change nothing")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("rekey takes no arguments, got %q", pos[0])
	}
	if *batch < 1 {
		return usagef("rekey: -batch must be at least 1, got %d", *batch)
	}
	if *to == "" {
		return usagef("rekey: name the key to encrypt with: -to KEYID (or $ARGO_CIPHER_ENCRYPT_WITH), one of the keys of $ARGO_CIPHER_KEYS")
	}
	c, err := e.g.cipher(*to)
	if err != nil {
		return err
	}
	if c == nil {
		return usagef("rekey: no keys: set $ARGO_CIPHER_KEYS to ID:BASE64KEY,… holding every key rows may be encrypted with and the key -to")
	}
	return withDB(e, func(ctx context.Context, in *runtime.Inspector) error {
		rep, err := in.Rekey(ctx, c, runtime.RekeyOptions{DryRun: *dry, Batch: *batch})
		if err != nil {
			return err
		}
		if e.json() {
			return writeJSON(e.stdout, struct {
				DryRun     bool           `json:"dry_run"`
				To         string         `json:"to"`
				Scanned    int            `json:"scanned"`
				Encrypted  map[string]int `json:"encrypted_by_key"`
				Current    int            `json:"current"`
				Rekeyed    int            `json:"rekeyed"`
				Changed    int            `json:"changed_meanwhile"`
				Unreadable map[string]int `json:"unreadable_by_key"`
				Remaining  int            `json:"remaining"`
			}{rep.DryRun, *to, rep.Scanned, rep.Encrypted, rep.Current, rep.Rekeyed, rep.Changed, rep.Unreadable, rep.Remaining()})
		}
		fmt.Fprintf(e.stdout, "%s\n", rep)
		switch {
		case rep.Remaining() == 0:
			fmt.Fprintf(e.stdout, "every encrypted row is under key %s: keys other than %s may be removed from every keyring\n", *to, *to)
		case rep.DryRun:
			fmt.Fprintf(e.stdout, "%d rows to rekey: run again without --dry-run\n", rep.Remaining())
		default:
			fmt.Fprintf(e.stdout, "%d rows remain under other keys: add the missing keys to $ARGO_CIPHER_KEYS and run again\n", rep.Remaining())
		}
		return nil
	})
}
