package runtime

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Arguments encrypted at rest (docs/encryption.md). With Config.Cipher
// set, the arguments of the task names it covers are stored in
// argo_task.task_parameter as a self-describing envelope
//
//	argo:enc:v1:<key id>:<base64 of nonce (12 bytes) || AES-256-GCM ciphertext and tag>
//
// instead of their JSON. The key id travels with the ciphertext (a copy
// made by a requeue stays readable; rekey finds rows by it); the AEAD's
// additional data binds the ciphertext to the envelope's version and key
// id and to the row's task name and tenant, which no write changes and
// every copy keeps, so a ciphertext moved to a task of another name or
// tenant does not decrypt there. The row's id is not bound: the database
// assigns it at INSERT, after the arguments are sealed, and a requeue
// (run by argoctl, which may hold no key) copies the arguments to a new id.

// EncryptedPrefix starts every encrypted task_parameter. Arguments in
// clear are JSON, which never starts with it; a hand-written Call whose
// Args start with it is refused.
const EncryptedPrefix = "argo:enc:"

// envelopeV1 is the prefix of the current envelope version.
const envelopeV1 = EncryptedPrefix + "v1:"

// CipherKeySize is the size of every key: AES-256.
const CipherKeySize = 32

// maxKeyID bounds a key id's length.
const maxKeyID = 64

// CipherKey is one key of a Cipher's keyring.
type CipherKey struct {
	// ID names the key in every row it encrypts: 1 to 64 characters of
	// A-Z a-z 0-9 . _ - (for example "k2" or "2026-11"). Never reuse an
	// id for different key bytes: rows sealed under the old bytes would
	// then wait forever as undecodable.
	ID string
	// Key is the key: CipherKeySize (32) random bytes, e.g. from
	// crypto/rand, kept in a secret store, never in the database.
	Key []byte
}

// Cipher encrypts task arguments at rest with AES-256-GCM (Config.Cipher,
// docs/encryption.md).
type Cipher struct {
	// Keys is the keyring: every key a stored row may be encrypted with.
	// An attempt (or fallback) of a task encrypted under a key this list
	// lacks does not run: it waits (ParseCipherKeys reads the list from
	// text, as argoctl does).
	Keys []CipherKey
	// EncryptWith names the key (its CipherKey.ID, which must be in Keys)
	// that new rows are encrypted with. Default "": nothing new is
	// encrypted, rows already encrypted are still decrypted (the first
	// step of a key rollout, or of turning encryption off).
	EncryptWith string
	// Names lists the task names whose arguments are encrypted. Default
	// nil: every task name.
	Names []string
}

// keyring is a validated Cipher: the AEAD of each key, ready to use.
type keyring struct {
	aeads   map[string]cipher.AEAD
	encID   string
	enc     cipher.AEAD // nil: nothing new is encrypted
	names   map[string]bool
	allName bool
}

// validKeyID reports whether id is 1-64 characters of A-Z a-z 0-9 . _ -.
func validKeyID(id string) bool {
	if id == "" || len(id) > maxKeyID {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// newKeyring validates c. A nil c is no keyring (nil, nil).
func newKeyring(c *Cipher) (*keyring, error) {
	if c == nil {
		return nil, nil
	}
	if len(c.Keys) == 0 {
		return nil, errors.New("argo: Config.Cipher has no keys: list every key rows may be encrypted with in Cipher.Keys (or leave Config.Cipher nil to store arguments in clear)")
	}
	k := &keyring{aeads: make(map[string]cipher.AEAD, len(c.Keys))}
	for i, key := range c.Keys {
		if !validKeyID(key.ID) {
			return nil, fmt.Errorf("argo: Config.Cipher.Keys[%d]: key id %q: give each key an id of 1 to %d characters of A-Z a-z 0-9 . _ -", i, key.ID, maxKeyID)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("argo: Config.Cipher.Keys: key id %q listed twice: give each key its own id (an id names one key for the life of the rows it encrypted)", key.ID)
		}
		if len(key.Key) != CipherKeySize {
			return nil, fmt.Errorf("argo: Config.Cipher.Keys[%d] (id %q): the key is %d bytes; AES-256 needs %d random bytes (e.g. head -c 32 /dev/urandom | base64)", i, key.ID, len(key.Key), CipherKeySize)
		}
		block, err := aes.NewCipher(key.Key)
		if err != nil {
			return nil, fmt.Errorf("argo: Config.Cipher.Keys[%d] (id %q): %w", i, key.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("argo: Config.Cipher.Keys[%d] (id %q): %w", i, key.ID, err)
		}
		k.aeads[key.ID] = aead
	}
	if c.EncryptWith != "" {
		aead, ok := k.aeads[c.EncryptWith]
		if !ok {
			return nil, fmt.Errorf("argo: Config.Cipher.EncryptWith %q is not in Cipher.Keys (%s): add that key to the keyring, or name one of those", c.EncryptWith, strings.Join(k.ids(), ", "))
		}
		k.encID, k.enc = c.EncryptWith, aead
	}
	k.allName = len(c.Names) == 0
	if !k.allName {
		k.names = make(map[string]bool, len(c.Names))
		for _, n := range c.Names {
			if n == "" {
				return nil, errors.New("argo: Config.Cipher.Names holds an empty task name: list task names, or leave Names nil to encrypt every task's arguments")
			}
			k.names[n] = true
		}
	}
	return k, nil
}

func (k *keyring) ids() []string {
	ids := make([]string, 0, len(k.aeads))
	for id := range k.aeads {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// encrypts reports whether new rows of task name are encrypted.
func (k *keyring) encrypts(name string) bool {
	return k != nil && k.enc != nil && (k.allName || k.names[name])
}

// additionalData is what the AEAD authenticates with the ciphertext: the
// envelope version and key id, the task name and the tenant.
func additionalData(keyID, name, tenant string) []byte {
	ad := make([]byte, 0, len(envelopeV1)+len(keyID)+len(name)+len(tenant)+3)
	ad = append(ad, envelopeV1...)
	ad = append(ad, keyID...)
	ad = append(ad, 0)
	ad = append(ad, name...)
	ad = append(ad, 0)
	ad = append(ad, tenant...)
	return ad
}

// seal encrypts plain for a row of name and tenant under key id with aead.
func seal(aead cipher.AEAD, id, name, tenant string, plain []byte) string {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("argo: crypto/rand failed: " + err.Error()) // crypto/rand does not fail on supported platforms
	}
	sealed := aead.Seal(nonce, nonce, plain, additionalData(id, name, tenant))
	head := len(envelopeV1) + len(id) + 1
	out := make([]byte, head+base64.StdEncoding.EncodedLen(len(sealed)))
	copy(out, envelopeV1)
	copy(out[len(envelopeV1):], id)
	out[head-1] = ':'
	base64.StdEncoding.Encode(out[head:], sealed)
	return string(out)
}

// EncryptedKeyID returns the key id of an encrypted task_parameter, and
// whether it is one. An envelope it cannot parse returns ("", true).
func EncryptedKeyID(param string) (string, bool) {
	if !strings.HasPrefix(param, EncryptedPrefix) {
		return "", false
	}
	rest, ok := strings.CutPrefix(param, envelopeV1)
	if !ok {
		return "", true
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok || !validKeyID(id) {
		return "", true
	}
	return id, true
}

// KeyMissingError is the error of arguments encrypted under a key the
// process does not hold (or an envelope it cannot read). A task with it
// waits, not charged an attempt.
type KeyMissingError struct {
	KeyID string // "" for an envelope that could not be parsed
}

func (e *KeyMissingError) Error() string {
	if e.KeyID == "" {
		return "arguments encrypted in an envelope this version cannot read (not " + envelopeV1 + "<key id>:<base64>)"
	}
	return fmt.Sprintf("arguments encrypted with key %q, which this process does not hold: add that key to Config.Cipher.Keys", e.KeyID)
}

// DecryptError is the error of arguments that do not decrypt with the key
// of their id: another key under the same id, or a ciphertext altered or
// copied from a task of another name or tenant.
type DecryptError struct {
	KeyID string
}

func (e *DecryptError) Error() string {
	return fmt.Sprintf("arguments encrypted with key %q do not decrypt with the key of that id held here: the key bytes differ from those that encrypted them, or the stored ciphertext was altered or copied from another task name or tenant", e.KeyID)
}

// open returns the arguments of a row of name and tenant: param itself
// when it is not encrypted, else its decryption, or a *KeyMissingError
// or *DecryptError.
func (k *keyring) open(name, tenant, param string) ([]byte, error) {
	if !strings.HasPrefix(param, EncryptedPrefix) {
		return []byte(param), nil
	}
	id, _ := EncryptedKeyID(param)
	if id == "" {
		return nil, &KeyMissingError{}
	}
	var aead cipher.AEAD
	if k != nil {
		aead = k.aeads[id]
	}
	if aead == nil {
		return nil, &KeyMissingError{KeyID: id}
	}
	body := param[len(envelopeV1)+len(id)+1:]
	sealed, err := base64.StdEncoding.DecodeString(body)
	if err != nil || len(sealed) < aead.NonceSize()+aead.Overhead() {
		return nil, &DecryptError{KeyID: id}
	}
	nonce, ct := sealed[:aead.NonceSize()], sealed[aead.NonceSize():]
	plain, err := aead.Open(ct[:0], nonce, ct, additionalData(id, name, tenant))
	if err != nil {
		return nil, &DecryptError{KeyID: id}
	}
	return plain, nil
}

// sealTask encrypts t's arguments when its name is covered; it refuses
// arguments in clear that start with EncryptedPrefix (they would be taken
// for an envelope). It runs after the tenant is stamped (bound in the AAD).
func (k *keyring) sealTask(t *Task) error {
	if strings.HasPrefix(t.Parameter, EncryptedPrefix) {
		return fmt.Errorf("arguments start with %q, which marks encrypted arguments: store arguments as JSON", EncryptedPrefix)
	}
	if !k.encrypts(t.Name) {
		return nil
	}
	t.Parameter = seal(k.enc, k.encID, t.Name, t.Tenant, []byte(t.Parameter))
	return nil
}

// OpenArguments returns the arguments of t in clear, decrypting them with
// c when they are encrypted. keyID is the key they are encrypted with (""
// for arguments in clear). Arguments encrypted under a key c lacks (or c
// nil) return a *KeyMissingError; ones that do not decrypt a *DecryptError.
// argoctl and the console use it to show "encrypted (key k2)".
func OpenArguments(t *Task, c *Cipher) (plain []byte, keyID string, err error) {
	keyID, _ = EncryptedKeyID(t.Parameter)
	k, err := newKeyring(c)
	if err != nil {
		return nil, keyID, err
	}
	plain, err = k.open(t.Name, t.Tenant, t.Parameter)
	return plain, keyID, err
}

// SealArguments returns plain encrypted as a task of name and tenant
// stores it under c.EncryptWith: the task_parameter a submit would write
// (for tools that write rows themselves, and tests).
func SealArguments(c *Cipher, name, tenant string, plain []byte) (string, error) {
	k, err := newKeyring(c)
	if err != nil {
		return "", err
	}
	if k == nil || k.enc == nil {
		return "", errors.New("argo: SealArguments needs a cipher with Cipher.EncryptWith set")
	}
	return seal(k.enc, k.encID, name, tenant, plain), nil
}

// ParseCipherKeys reads a keyring from text: comma-separated ID:KEY pairs,
// KEY being 32 bytes in standard base64 (e.g. "k1:3q2+7w...=,k2:..."), as
// argoctl reads it from ARGO_CIPHER_KEYS.
func ParseCipherKeys(s string) ([]CipherKey, error) {
	var keys []CipherKey
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, b64, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("argo: cipher key %d: want ID:BASE64KEY (e.g. k2:$(head -c 32 /dev/urandom | base64)), got no ':'", i+1)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("argo: cipher key %d (id %q): the key is not standard base64: %v", i+1, id, err)
		}
		keys = append(keys, CipherKey{ID: strings.TrimSpace(id), Key: key})
	}
	return keys, nil
}

// openTask returns the arguments of t's attempt or fallback in clear. A
// key missing or a ciphertext that does not decrypt is Undecodable: the
// task waits, not charged an attempt (executor.go).
func (rt *Runtime) openTask(t *Task) ([]byte, error) {
	if rt.cfg.ring == nil && !strings.HasPrefix(t.Parameter, EncryptedPrefix) {
		return []byte(t.Parameter), nil
	}
	plain, err := rt.cfg.ring.open(t.Name, t.Tenant, t.Parameter)
	if err != nil {
		return nil, Undecodable(fmt.Errorf("%w on instance %s; the task waits, not charged an attempt (docs/encryption.md)", err, rt.cfg.InstanceID))
	}
	return plain, nil
}

// stampAndSeal stamps the caller's tenant and trace on t (stampCaller),
// then encrypts its arguments if Config.Cipher covers its name: every
// submit path (Submit, SubmitTx, SubmitGroup and After) builds its row so.
func (rt *Runtime) stampAndSeal(ctx context.Context, c Call, t *Task) error {
	if err := stampCaller(ctx, c, t); err != nil {
		return err
	}
	return rt.cfg.ring.sealTask(t)
}

// undecodableMessage is the error_msg of a task given back undecodable:
// its arguments encrypted under a key not held here, or not decoding into
// its parameters.
func undecodableMessage(t *Task, err error) string {
	var missing *KeyMissingError
	var bad *DecryptError
	if errors.As(err, &missing) || errors.As(err, &bad) {
		return fmt.Sprintf("task %d (%s): %v", t.ID, t.Name, err)
	}
	return fmt.Sprintf("task %d (%s): %v: deploy code whose parameters match the stored arguments, or discard the task with argoctl", t.ID, t.Name, err)
}
