package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// The gated claim of a flow group (flow_state.go has the rules).
//
// Every claim of a group's attempts runs in one transaction that first
// locks the group's argo_flow row (FlowLockRead) and, unless it took
// nothing and changed nothing, ends by writing it (FlowWrite, lock_seq + 1): the claims of one group are
// serialised across instances, and on Galera two that took on different
// nodes conflict at certification (one is rolled back and runs again).
// Inside it, the group's running rows are counted (with the candidates, in
// one statement): the slots of the concurrency
// cap are the running rows themselves, so a slot is released by whatever
// ends the attempt's running state (its finish, the rescue of a lost
// lease, an operator's change), exactly once, with no second record to
// keep in step. Then the rate bucket and the breaker decide, the candidates
// are taken with the ordinary fenced ClaimTake, and the row is written
// back. Names without a group never come here: their claim is unchanged.
//
// Every path that makes a row running outside a claim (the first attempt
// written leased by Submit, a transactional submit's watcher, held retries)
// is closed to grouped names by the runtime; a fallback (exhausted to
// falling_back) is not an attempt and is not gated.

// FlowClaim is one gated claim.
type FlowClaim struct {
	Group string
	// Names are the group's task names this instance runs (it claims only
	// those); they are added to the group's members, whose running rows
	// count against the cap whichever instance declared them.
	Names  []string
	Policy FlowPolicy
	Owner  string
	// Now is the claim's time; LeaseUntil the leases' end.
	Now, LeaseUntil Millis
	Limit           int
	// Busy: the caller's last claim of the group took tasks, so the plain
	// read that spares an idle group its transaction is skipped.
	Busy bool
	// BeforeTake, if set, runs inside the claim's transaction between the
	// candidates' read and their take (the conformance suite changes a
	// candidate there, as a concurrent writer would). nil in production.
	// In the batched claim (flow_batched.go) tx is nil: there is no
	// *sqlx.Tx, and a change must come from another connection.
	BeforeTake func(ctx context.Context, tx *sqlx.Tx, candidates []*Task) error
	// Tenants, if set, limits the claim to tasks of these tenants; nil:
	// every tenant (instance_scope.go).
	Tenants []string
	// GrantSlots, if above 0, asks for a slot grant of that many slots (the
	// instance's workers) until GrantUntil (flow_grants.go).
	GrantSlots int
	GrantUntil Millis
}

// FlowClaimResult is what a gated claim took, and when to try again.
type FlowClaimResult struct {
	Tasks []*Task
	// WakeAt is when the group may admit more (a token, the end of a
	// cool-down); 0 when only a finished attempt frees room.
	WakeAt Millis
	// Breaker is the group's breaker after the claim.
	Breaker BreakerState
	// GrantUntil is the end of the slot grant the claim gave: 0 for none
	// (the owner's earlier grant, if any, was dropped), and also when the
	// claim found nothing due (it did not count the running rows; the
	// row's grant, if any, is left to run out).
	GrantUntil Millis
}

// ErrFlowGroupUnknown is returned by SetBreaker for a group no instance
// has claimed yet.
var ErrFlowGroupUnknown = errors.New("argo: no such flow group")

// lockFlow reads the group's row inside tx, locked until tx ends,
// creating it first if needed (and create is set).
func (s *Store) lockFlow(ctx context.Context, tx *sqlx.Tx, group string, create bool) (*FlowState, error) {
	var st FlowState
	err := tx.GetContext(ctx, &st, s.sql.FlowLockRead, group)
	if errors.Is(err, sql.ErrNoRows) {
		if !create {
			return nil, fmt.Errorf("%w %q: flow groups appear once an instance running one of their tasks has claimed", ErrFlowGroupUnknown, group)
		}
		if _, err := tx.ExecContext(ctx, s.sql.FlowInsert, group); err != nil {
			return nil, err
		}
		err = tx.GetContext(ctx, &st, s.sql.FlowLockRead, group)
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// ClaimFlow leases up to c.Limit due tasks of c.Names within the group's
// cap, rate and breaker (attempts), and due fallbacks of those names
// (not gated), in one transaction at READ COMMITTED.
func (s *Store) ClaimFlow(ctx context.Context, c FlowClaim) (FlowClaimResult, error) {
	var out FlowClaimResult
	if len(c.Names) == 0 || c.Limit <= 0 {
		return out, nil
	}
	c.LeaseUntil = s.claimLease(c.LeaseUntil) // claim_unknown.go
	// A group with nothing due costs one plain read, no write: the poll of
	// an idle group neither locks its row nor queues behind its claimers.
	// A group the caller found busy skips it (it would find work).
	nameIn, nameArgs := InList(c.Names)
	scope, nameArgs := withTenants("task_id IN "+nameIn, nameArgs, c.Tenants)
	if !c.Busy {
		var due []int64
		if err := s.db.SelectContext(ctx, &due, s.sql.FlowDue(StateSet(ClaimableStates...), scope),
			append(append([]any{c.Now, c.Now}, nameArgs...), 1)...); err != nil {
			return out, err
		}
		if len(due) == 0 {
			return out, nil
		}
	}
	batched := false
	if fb, ok := s.d.(FlowBatcher); ok && c.Policy.RetryBudget == nil {
		// Three round trips instead of about eight (flow_batched.go); the
		// ordinary claim below when it cannot decide (nothing changed then),
		// or the server rolled it back for a lock conflict.
		r, done, err := s.claimFlowBatched(ctx, fb, c, scope, slices.Clip(append([]any{c.Now, c.Now}, nameArgs...)))
		if err != nil && !s.d.IsRetryableLockError(err) {
			return FlowClaimResult{}, s.noteClaim(err) // rows of a lost COMMIT's answer: given back (claim_unknown.go)
		}
		out, batched = r, err == nil && done
	}
	var maybe []*Task // every candidate a take was tried on, as read
	claim := func(tx *sqlx.Tx) error {
		out = FlowClaimResult{}
		maybe = maybe[:0]
		st, err := s.lockFlow(ctx, tx, c.Group, true)
		if err != nil {
			return err
		}
		read := *st
		st.addMembers(c.Names)
		dueArgs := slices.Clip(append([]any{c.Now, c.Now}, nameArgs...))
		takeRead := func(cands []*Task) ([]*Task, error) {
			if len(cands) == 0 {
				return nil, nil
			}
			if c.BeforeTake != nil {
				if err := c.BeforeTake(ctx, tx, cands); err != nil {
					return nil, err
				}
			}
			maybe = append(maybe, cands...)
			return s.takeFlow(ctx, tx, c, SortedByID(cands))
		}
		take := func(states []State, limit int, scope string) ([]*Task, error) {
			if limit <= 0 {
				return nil, nil
			}
			var cands []*Task
			if err := tx.SelectContext(ctx, &cands, s.sql.FlowCandidates(StateSet(states...), scope), append(dueArgs, limit)...); err != nil {
				return nil, err
			}
			return takeRead(cands)
		}
		var attempts []*Task
		var admit int
		var probe bool
		var oldestDue Millis
		if c.Policy.RetryBudget == nil {
			// One read: the due candidates (oldest first, as many as the
			// claim could take) and the group's running rows, counted by the
			// same statement after the row lock (so as exactly as a read of
			// their own).
			cands, running, err := s.flowCandidatesCounted(ctx, tx, c, st, scope, dueArgs)
			if err != nil {
				return err
			}
			oldestDue = OldestDue(cands)
			admit, probe, out.WakeAt = st.Admit(c.Policy, c.Now, len(cands), running+st.grantedSlots(c.Owner, c.Now), oldestDue)
			if attempts, err = takeRead(cands[:admit]); err != nil {
				return err
			}
			if len(cands) > 0 { // else running was not counted
				out.GrantUntil = st.decideGrant(c, running)
			}
		} else {
			running := 0
			if c.Policy.Limit > 0 {
				members := st.MemberNames()
				_, args := InList(members)
				if err := tx.GetContext(ctx, &running, s.sql.FlowRunning(len(members)), args...); err != nil {
					return err
				}
				out.GrantUntil = st.decideGrant(c, running) // a retry budget: none, and its own dropped
				running += st.grantedSlots(c.Owner, c.Now)
			}
			if c.Policy.releaseNeedsBacklog(st, c.Now) {
				// Past ReleaseFor, the release lasts while the backlog does:
				// the oldest due candidate says (one more read, only then).
				var oldest []*Task
				if err := tx.SelectContext(ctx, &oldest, s.sql.FlowCandidates(StateSet(WaitingStates...), scope), append(dueArgs, 1)...); err != nil {
					return err
				}
				oldestDue = OldestDue(oldest)
			}
			admit, probe, out.WakeAt = st.Admit(c.Policy, c.Now, c.Limit, running, oldestDue)
			if attempts, err = s.takeWithinBudget(c, st, admit, scope, take); err != nil {
				return err
			}
		}
		var probeID int64
		if probe && len(attempts) > 0 {
			probeID = attempts[0].ID
		}
		st.Took(c.Policy, c.Now, len(attempts), probe, probeID, oldestDue)
		fallbacks, err := take([]State{StateExhausted}, c.Limit-len(attempts), scope)
		if err != nil {
			return err
		}
		out.Tasks = append(attempts, fallbacks...)
		// A claim that took nothing and changed nothing in st (a group at
		// its cap, a half-open breaker) writes nothing, and has nothing to
		// certify on Galera.
		if len(out.Tasks) > 0 || *st != read {
			if _, err := tx.ExecContext(ctx, s.sql.FlowWrite, st.flowWriteArgs()...); err != nil {
				return err
			}
		}
		out.Breaker = st.Breaker
		return nil
	}
	if !batched {
		if err := s.writeIso(ctx, sql.LevelReadCommitted, claim); err != nil {
			// A COMMIT whose answer was lost may have taken the rows: they
			// are remembered and given back (claim_unknown.go).
			return FlowClaimResult{}, s.noteClaim(ClaimUnknown(s.d, err, c.Owner, c.Now, c.LeaseUntil, maybe))
		}
	}
	for _, t := range out.Tasks { // as the claim's SET wrote them
		if t.State == StateExhausted {
			t.State = StateFallingBack
		} else {
			t.ExecuteTimes++
			t.State = StateRunning
		}
		t.LeaseOwner, t.LeaseUntil, t.GmtModified = c.Owner, c.LeaseUntil, c.Now
	}
	return out, nil
}

// FlowOutcome reports how an attempt of the group's task taskID ended to
// its breaker (see FlowState.Outcome), and returns the breaker's state.
func (s *Store) FlowOutcome(ctx context.Context, group string, p FlowPolicy, taskID int64, ok bool, now Millis) (BreakerState, error) {
	var state BreakerState
	err := s.writeIso(ctx, sql.LevelReadCommitted, func(tx *sqlx.Tx) error {
		st, err := s.lockFlow(ctx, tx, group, true)
		if err != nil {
			return err
		}
		st.Outcome(p, now, taskID, ok)
		state = st.Breaker
		_, err = tx.ExecContext(ctx, s.sql.FlowWrite, st.flowWriteArgs()...)
		return err
	})
	return state, err
}

// SetBreaker opens (open) or closes a group's breaker by hand, as operator
// who, with an optional reason, and records it in the operator trail
// (FlowActions) in the same transaction. An operator's open holds until an
// operator closes it; closing starts the bounded release as a probe's
// success would.
func (s *Store) SetBreaker(ctx context.Context, group string, open bool, who, reason string, now Millis) error {
	if strings.TrimSpace(group) == "" {
		return errors.New("argo: a flow group name is needed (argoctl flow lists them)")
	}
	if err := checkOperatorName(who); err != nil {
		return err
	}
	if err := CheckOperatorText("reason", reason); err != nil {
		return err
	}
	action := ActionBreakerClose
	if open {
		action = ActionBreakerOpen
	}
	return s.writeIso(ctx, sql.LevelReadCommitted, func(tx *sqlx.Tx) error {
		st, err := s.lockFlow(ctx, tx, group, false)
		if err != nil {
			return err
		}
		st.UpdatedAt = now
		if open {
			st.Breaker, st.BreakerUntil, st.ProbeTask = BreakerForcedOpen, 0, 0
			st.OpenedCount++
			st.Grants = "" // holders stop at their next renewal (flow_grants.go)
		} else {
			st.close(now)
		}
		if _, err = tx.ExecContext(ctx, s.sql.FlowWrite, st.flowWriteArgs()...); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.sql.InsertGroupAction, action, operatorName(who), SanitizeErrorText(reason), now, group)
		return err
	})
}

// FlowActions reads the operator trail of flow group group (its breaker
// opened and closed by hand), oldest first.
func (s *Store) FlowActions(ctx context.Context, group string) ([]OperatorAction, error) {
	var out []OperatorAction
	if err := s.db.SelectContext(ctx, &out, s.sql.GroupActions, group); err != nil {
		return nil, fmt.Errorf("argo: operator trail of flow group %q: %w", group, err)
	}
	return out, nil
}

// FlowGroups reads the state of every flow group, by name.
func (s *Store) FlowGroups(ctx context.Context) ([]FlowState, error) {
	var out []FlowState
	err := s.db.SelectContext(ctx, &out, s.sql.FlowGroups)
	return out, err
}

// takeFlow takes candidates byID inside the gated claim's transaction with
// one fenced UPDATE (each row still as read), and returns those it took.
// When it changed fewer rows than candidates (a row changed since the
// read), the rows are read back, inside the transaction, to tell which.
func (s *Store) takeFlow(ctx context.Context, tx *sqlx.Tx, c FlowClaim, byID []*Task) ([]*Task, error) {
	if len(byID) == 0 {
		return nil, nil
	}
	args := []any{c.Owner, c.LeaseUntil, c.Now}
	ids := make([]any, len(byID))
	for i, t := range byID {
		ids[i] = t.ID
	}
	args = append(args, ids...)
	for _, t := range byID {
		args = append(args, t.ShardKey)
	}
	for _, t := range byID {
		args = append(args, t.ID, t.State, t.ExecuteTimes)
	}
	res, err := tx.ExecContext(ctx, s.sql.FlowTakeAll(len(byID)), append(args, c.Now, c.Now)...)
	if err != nil {
		return nil, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, err
	}
	if n == int64(len(byID)) {
		return byID, nil
	}
	var rows []struct {
		ID      int64  `db:"id"`
		Attempt int    `db:"execute_times"`
		Shard   int    `db:"shard_key"`
		Owner   string `db:"lease_owner"`
		State   State  `db:"task_status"`
	}
	if err := tx.SelectContext(ctx, &rows, s.sql.LeaseHolders(len(ids)), append(ids, shardArgs(byID)...)...); err != nil {
		return nil, err
	}
	now := map[int64]int{}
	for _, r := range rows {
		if r.Owner == c.Owner && r.State.Leased() {
			now[r.ID] = r.Attempt
		}
	}
	var took []*Task
	for _, t := range byID {
		want := t.ExecuteTimes + 1
		if t.State == StateExhausted {
			want = t.ExecuteTimes
		}
		if a, ok := now[t.ID]; ok && a == want {
			took = append(took, t)
		}
	}
	return took, nil
}

// flowCandidatesCounted reads, inside the claim's transaction, up to
// c.Limit due candidates of the group's attempts and, when the policy has
// a cap, the group's running rows (every member's) in the same statement.
// With no candidate the count is not needed (nothing would start) and 0.
func (s *Store) flowCandidatesCounted(ctx context.Context, tx *sqlx.Tx, c FlowClaim, st *FlowState, scope string, dueArgs []any) ([]*Task, int, error) {
	states := StateSet(WaitingStates...)
	if c.Policy.Limit <= 0 {
		var cands []*Task
		err := tx.SelectContext(ctx, &cands, s.sql.FlowCandidates(states, scope), append(dueArgs, c.Limit)...)
		return cands, 0, err
	}
	members := st.MemberNames()
	_, memberArgs := InList(members)
	var rows []struct {
		Task
		Running int `db:"flow_running"`
	}
	if err := tx.SelectContext(ctx, &rows, s.sql.FlowCandidatesCounted(states, scope, len(members)),
		append(append(memberArgs, dueArgs...), c.Limit)...); err != nil {
		return nil, 0, err
	}
	cands := make([]*Task, len(rows))
	running := 0
	for i := range rows {
		cands[i], running = &rows[i].Task, rows[i].Running
	}
	return cands, running, nil
}
