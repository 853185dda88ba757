package faultcheck

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// Feature crypt (docs/encryption.md): every worker runs with a
// Config.Cipher holding two keys, CryptKeyIDs, and encrypts the arguments
// of CryptNames (the others stay in clear) with the first key on even
// slots and the second on odd ones, so that the table holds both; under
// the operator feature the operator re-encrypts the table to one of them
// (Inspector.Rekey, ActRekey) at random moments, while attempts, requeues
// and cancels run on the rows it rewrites. The checker decrypts the rows
// it reads (OpenRow) before args-exact compares them with what was
// submitted, and InvCrypt checks what is stored encrypted.

// FeatureCrypt encrypts the arguments of CryptNames at rest.
const FeatureCrypt = "crypt"

// CryptNames are the task names whose arguments are encrypted: async,
// sync (its first attempt runs from the row written), a fallback, and a
// retry budget's give-backs.
var CryptNames = []string{TaskPlain, TaskSync, TaskFallback, TaskBudget}

// CryptKeyIDs are the ids of the workload's two keys.
var CryptKeyIDs = [2]string{"fc-k1", "fc-k2"}

// ActRekey is the operator's Inspector.Rekey of the whole table to one of
// the two keys, in batches of 1 to 50 rows (Record.Note: its report).
const ActRekey = "rekey"

// InvCrypt: with FeatureCrypt, every row of a CryptNames task is stored
// encrypted under one of the workload's keys and decrypts (the AAD binds
// its name and tenant), and every other row is stored in clear.
const InvCrypt = "crypt-at-rest"

// CryptCipher is the cipher of the worker of slot (encrypting with the
// rekey target target, if not "").
func CryptCipher(slot int, target string) *runtime.Cipher {
	c := &runtime.Cipher{EncryptWith: CryptKeyIDs[slot%2], Names: CryptNames}
	if target != "" {
		c.EncryptWith = target
	}
	for _, id := range CryptKeyIDs {
		k := sha256.Sum256([]byte("faultcheck key " + id)) // test keys, derived: the checker holds them too
		c.Keys = append(c.Keys, runtime.CipherKey{ID: id, Key: k[:]})
	}
	return c
}

// OpenRow decrypts r.Param in place if it is encrypted, setting r.KeyID
// (and r.CryptErr if it does not decrypt: r.Param is then left as stored,
// and args-exact fails on it too).
func OpenRow(r *Row, tenant string) {
	id, ok := runtime.EncryptedKeyID(string(r.Param))
	if !ok {
		return
	}
	r.KeyID = id
	if r.KeyID == "" {
		r.KeyID = "?"
	}
	plain, _, err := runtime.OpenArguments(&runtime.Task{Name: r.Name, Tenant: tenant, Parameter: string(r.Param)}, CryptCipher(0, ""))
	if err != nil {
		r.CryptErr = err.Error()
		return
	}
	r.Param = plain
}

// checkCrypt is InvCrypt over in.
func checkCrypt(in Input, bad func(inv, format string, args ...any)) {
	for _, r := range in.Rows {
		switch {
		case r.CryptErr != "":
			bad(InvCrypt, "task %d (%s): its arguments, encrypted under key %s, do not decrypt: %s", r.ID, r.Name, r.KeyID, r.CryptErr)
		case !in.Crypt:
			if r.KeyID != "" {
				bad(InvCrypt, "task %d (%s): stored encrypted (key %s) without the crypt feature", r.ID, r.Name, r.KeyID)
			}
		case slices.Contains(CryptNames, r.Name) && !slices.Contains(CryptKeyIDs[:], r.KeyID):
			bad(InvCrypt, "task %d (%s): stored in clear (or under key %q), but its name is one the workers encrypt", r.ID, r.Name, r.KeyID)
		case !slices.Contains(CryptNames, r.Name) && r.KeyID != "":
			bad(InvCrypt, "task %d (%s): stored encrypted (key %s), but its name is not one the workers encrypt", r.ID, r.Name, r.KeyID)
		}
	}
}

// rekey re-encrypts the table to one of the two keys.
func (o *Operator) rekey(ctx context.Context) {
	to := CryptKeyIDs[o.cr.IntN(2)]
	o.h.Write(Record{Kind: KindOperator, Ev: ActRekey + ":begin", Note: to})
	rep, err := o.in.Rekey(ctx, CryptCipher(0, to), runtime.RekeyOptions{Batch: 1 + o.cr.IntN(50)})
	r := Record{Kind: KindOperator, Ev: ActRekey, Answer: "ok", Note: "to " + to + ": " + rep.String()}
	if err != nil {
		r.Answer, r.Err = "error", err.Error()
	}
	o.h.Write(r)
}

// CryptSummary counts the rekeys of a run's operator, with the first
// three reports and the first failure's error (a rekey during a server
// restart or a partition fails; the next one goes on): for the test's log.
func CryptSummary(recs []Record) string {
	n, failed := 0, 0
	var notes []string
	for _, r := range recs {
		if r.Kind == KindOperator && r.Ev == ActRekey {
			n++
			if r.Answer != "ok" {
				failed++
				if failed == 1 {
					notes = append(notes, "failed: "+r.Err)
				}
				continue
			}
			if len(notes) < 3 {
				notes = append(notes, r.Note)
			}
		}
	}
	return fmt.Sprintf("%d rekeys (%d failed); first: %s", n, failed, strings.Join(notes, " | "))
}
