package storage

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

// Slot grants (docs/flow-control.md, "Slot grants"): the lock-free claim of
// a concurrency cap far from binding.
//
// The gated claim serialises a group's claims on its argo_flow row, which
// costs a transaction of several statements per claim. A cap that cannot
// bind does not need that: an instance never runs more attempts at once than
// it has workers, so while the group's running rows, plus every other
// instance's grant, plus this instance's workers stay within the cap, this
// instance may claim the group's tasks with the plain claim (no lock, no
// count, no write) and the cap still holds. The locked claim grants that
// (FlowClaim.GrantSlots), for GrantUntil, and records it in the row's grants
// column (migration 000013), under the row's lock: every locked claim of
// another instance counts the live grants as running slots (all of them,
// though a holder's running rows are counted too: a grant only exists far
// below the cap, where counting twice costs nothing), so it cannot admit
// into the room a holder may still fill. A claim that finds the cap closer
// than that takes no grant and drops its own: the group is back to exact,
// locked claims once the other holders' grants have run out or been renewed
// (refused the same way).
//
// A stopping instance drops its grants (DropFlowGrant) once it claims no
// more: the others need not wait for them to run out.
//
// Only a group whose sole gate is the cap takes grants (FlowPolicy.Grantable):
// a rate limit, a breaker and a retry budget are decided per claim. An
// operator's open drops every grant (SetBreaker); a holder learns it at its
// next renewal.

// FlowGrantColumns is argo_flow's slot-grant column (migration 000013), as
// FlowState's Grants (NULL reads as none).
const FlowGrantColumns = "COALESCE(grants, '') AS grants"

// Grantable says whether the policy's groups take slot grants: a cap and no
// other gate.
func (p FlowPolicy) Grantable() bool {
	return p.Limit > 0 && p.Rate == 0 && p.Breaker == nil && p.RetryBudget == nil
}

// FlowGrant is one instance's slot grant.
type FlowGrant struct {
	Owner string
	Slots int
	Until Millis
}

// FlowGrants parses the grants column (a line it cannot read is skipped).
func (st *FlowState) FlowGrants() []FlowGrant {
	var out []FlowGrant
	for line := range strings.SplitSeq(st.Grants, "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			continue
		}
		until, err1 := strconv.ParseInt(f[0], 10, 64)
		slots, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil || slots < 0 {
			continue
		}
		out = append(out, FlowGrant{Owner: f[2], Slots: slots, Until: Millis(until)})
	}
	return out
}

// grantedSlots is the slots of the live grants (Until after now) of
// instances other than owner: room their plain claims may fill.
func (st *FlowState) grantedSlots(owner string, now Millis) int {
	n := 0
	for _, g := range st.FlowGrants() {
		if g.Owner != owner && g.Until > now {
			n += g.Slots
		}
	}
	return n
}

// setGrant records owner's grant of slots until until (slots 0: none), and
// drops the grants that have run out by now.
func (st *FlowState) setGrant(owner string, slots int, until, now Millis) {
	var kept []FlowGrant
	for _, g := range st.FlowGrants() {
		if g.Owner != owner && g.Until > now {
			kept = append(kept, g)
		}
	}
	if slots > 0 {
		kept = append(kept, FlowGrant{Owner: owner, Slots: slots, Until: until})
	}
	slices.SortFunc(kept, func(a, b FlowGrant) int { return strings.Compare(a.Owner, b.Owner) })
	var b strings.Builder
	for _, g := range kept {
		b.WriteString(strconv.FormatInt(int64(g.Until), 10) + " " + strconv.Itoa(g.Slots) + " " + g.Owner + "\n")
	}
	st.Grants = b.String()
}

// decideGrant grants c.Owner c.GrantSlots until c.GrantUntil if, with the
// group's running rows (counted before this claim's admits, which are among
// the owner's slots) and the other instances' live grants, the owner's
// slots still fit within the cap; otherwise it drops the owner's grant. It
// returns the grant's end (0: none).
func (st *FlowState) decideGrant(c FlowClaim, running int) Millis {
	eligible := c.GrantSlots > 0 && c.Policy.Grantable() && st.Breaker == BreakerClosed && !strings.ContainsAny(c.Owner, "\n")
	if !eligible || running+st.grantedSlots(c.Owner, c.Now)+c.GrantSlots > c.Policy.Limit {
		st.setGrant(c.Owner, 0, 0, c.Now) // unchanged (no write) if there was none to drop
		return 0
	}
	st.setGrant(c.Owner, c.GrantSlots, c.GrantUntil, c.Now)
	return c.GrantUntil
}

// hasGrant says whether owner has a grant in the row (live or not).
func (st *FlowState) hasGrant(owner string) bool {
	return slices.ContainsFunc(st.FlowGrants(), func(g FlowGrant) bool { return g.Owner == owner })
}

// DropFlowGrant removes owner's slot grant of group, if the row has one
// (an instance that stops: it claims no more). Its running rows still
// count, as every instance's do. A group with no row is no error.
func (s *Store) DropFlowGrant(ctx context.Context, group, owner string, now Millis) error {
	return s.writeIso(ctx, sql.LevelReadCommitted, func(tx *sqlx.Tx) error {
		st, err := s.lockFlow(ctx, tx, group, false)
		if errors.Is(err, ErrFlowGroupUnknown) {
			return nil
		}
		if err != nil || !st.hasGrant(owner) {
			return err
		}
		st.setGrant(owner, 0, 0, now)
		_, err = tx.ExecContext(ctx, s.sql.FlowWrite, st.flowWriteArgs()...)
		return err
	})
}
