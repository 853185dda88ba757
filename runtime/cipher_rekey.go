package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/argo-retry/argo/internal/storage"
)

// RekeyBatchDefault is RekeyOptions.Batch's default.
const RekeyBatchDefault = 500

// RekeyOptions tunes Inspector.Rekey.
type RekeyOptions struct {
	// DryRun counts the rows that would be re-encrypted (and those that
	// cannot be) and changes nothing.
	DryRun bool
	// Batch is how many rows one statement reads (in id order) and one
	// transaction rewrites. Default RekeyBatchDefault (500).
	Batch int
}

// RekeyReport is what a rekey found and did.
type RekeyReport struct {
	DryRun    bool           // nothing was written
	Scanned   int            // rows read
	Encrypted map[string]int // rows found encrypted, by key id ("" for an envelope not understood)
	Current   int            // already under the encryption key: left as they are
	Rekeyed   int            // re-encrypted under the encryption key (DryRun: would be)
	Changed   int            // changed between the read and the rewrite: left as they are; run again
	// Unreadable counts the rows that cannot be re-encrypted here, by key
	// id: encrypted under a key the cipher lacks, or not decrypting with it.
	Unreadable map[string]int
}

// Remaining is how many rows are still encrypted under another key than
// the encryption key after the rekey (before it, for a DryRun): zero
// means the old keys can be removed from every keyring.
func (r RekeyReport) Remaining() int {
	n := r.Changed
	for _, v := range r.Unreadable {
		n += v
	}
	if r.DryRun {
		n += r.Rekeyed
	}
	return n
}

// Rekey re-encrypts, under c.EncryptWith, the arguments of every task row
// encrypted under another key of c's keyring, whatever the row's state
// and task name (a row stays encrypted once it is: c.Names only says what
// new rows are). It walks the table in id order, in batches of
// opt.Batch rows: one read, then one transaction of fenced rewrites, each
// setting task_parameter only where it still holds what was read and
// touching no other column. A running row is re-encrypted too: its attempt
// holds its arguments already, its lease and state are not written. A row
// that changed meanwhile (or was deleted) is left as it is and counted in
// Changed; one encrypted under a key c lacks, or that does not decrypt, is
// counted in Unreadable and left as it is. Rows submitted while it runs
// may be written under the old key by instances not yet configured with
// the new EncryptWith, and MySQL assigns ids at INSERT, so a row committed
// late may fall behind the walk: run Rekey (or its DryRun) again until
// Remaining is zero before removing an old key (docs/encryption.md).
func (in *Inspector) Rekey(ctx context.Context, c *Cipher, opt RekeyOptions) (RekeyReport, error) {
	rep := RekeyReport{DryRun: opt.DryRun, Encrypted: map[string]int{}, Unreadable: map[string]int{}}
	k, err := newKeyring(c)
	if err != nil {
		return rep, err
	}
	if k == nil || k.enc == nil {
		return rep, errors.New("argo: rekey needs a cipher with an encryption key (Cipher.EncryptWith; for argoctl, -to or ARGO_CIPHER_ENCRYPT_WITH) and every key rows may be encrypted with (Cipher.Keys; ARGO_CIPHER_KEYS)")
	}
	if opt.Batch <= 0 {
		opt.Batch = RekeyBatchDefault
	}
	var after int64
	for {
		rows, err := in.store.RekeyBatch(ctx, after, opt.Batch)
		if err != nil {
			return rep, err
		}
		if len(rows) == 0 {
			return rep, nil
		}
		after = rows[len(rows)-1].ID
		rep.Scanned += len(rows)
		var rw []storage.Rewrite
		for _, r := range rows {
			if r.Parameter == "" {
				continue
			}
			id, _ := EncryptedKeyID(r.Parameter)
			rep.Encrypted[id]++
			if id == k.encID {
				rep.Current++
				continue
			}
			plain, err := k.open(r.Name, r.Tenant, r.Parameter)
			if err != nil {
				rep.Unreadable[id]++
				continue
			}
			rw = append(rw, storage.Rewrite{ID: r.ID, Shard: r.Shard, Old: r.Parameter, New: seal(k.enc, k.encID, r.Name, r.Tenant, plain)})
		}
		if opt.DryRun || len(rw) == 0 {
			rep.Rekeyed += len(rw)
			continue
		}
		done, err := in.store.RewriteParameters(ctx, rw)
		if err != nil {
			return rep, fmt.Errorf("argo: rekey: rewriting rows %d to %d: %w (rows before were rekeyed; run again)", rw[0].ID, rw[len(rw)-1].ID, err)
		}
		rep.Rekeyed += len(done)
		rep.Changed += len(rw) - len(done)
	}
}

// keyCounts formats a count by key id, ids sorted ("k1: 3, k2: 5").
func keyCounts(m map[string]int) string {
	s := ""
	for _, id := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += ", "
		}
		name := id
		if name == "" {
			name = "(unknown envelope)"
		}
		s += fmt.Sprintf("%s: %d", name, m[id])
	}
	return s
}

// String is the report in one line.
func (r RekeyReport) String() string {
	verb := "rekeyed"
	if r.DryRun {
		verb = "would rekey"
	}
	return fmt.Sprintf("scanned %d rows; encrypted by key {%s}; already under the encryption key %d; %s %d; changed meanwhile %d; unreadable here {%s}; remaining under other keys %d",
		r.Scanned, keyCounts(r.Encrypted), r.Current, verb, r.Rekeyed, r.Changed, keyCounts(r.Unreadable), r.Remaining())
}
