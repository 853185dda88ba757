package storage

import (
	"context"
	"slices"
	"sync"
)

// The gated claim in three round trips (a driver that can batch
// statements, FlowBatcher; MySQL's one-trip pool). The ordinary gated claim
// (flow.go) sends each statement on its own: BEGIN (with its isolation
// level), the group row's lock, the candidates (with the running count),
// the take, the fallbacks, the group row's write and COMMIT, about eight
// round trips where a plain claim needs three. The batched claim sends the
// same statements, in the same order, inside the same READ COMMITTED
// transaction, in three batches:
//
//	1. SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION;
//	   the group row FOR UPDATE; the candidates with the group's running
//	   count; the due fallbacks
//	2. the take (one fenced UPDATE of every candidate admitted); the group
//	   row's write
//	3. COMMIT, if the take changed every row it named; otherwise ROLLBACK,
//	   and the claim runs again the ordinary way (a candidate changed
//	   between the read and the take: the ordinary claim reads it back)
//
// Because batch 1 must name the members whose running rows count before
// it has read the group's row, it names those this Store last saw there
// (plus the caller's). If the row names another (an instance that declared
// a new name meanwhile), the count missed its running rows: the batch is
// rolled back and the ordinary claim runs. A group with a retry budget, a
// row not there yet, and a driver without batches take the ordinary claim
// too.

// FlowBatcher is a Driver that can run a gated claim's transaction in
// batches of statements (optional; the Store asks by type assertion).
type FlowBatcher interface {
	// BeginFlowBatch opens a connection for one batched gated claim; ok is
	// false when the driver cannot batch now (no one-trip pool): the
	// caller takes the ordinary claim.
	BeginFlowBatch(ctx context.Context) (b FlowBatch, ok bool, err error)
}

// FlowQuery is one statement of a batch and its arguments.
type FlowQuery struct {
	SQL  string
	Args []any
}

// FlowBatch is a batched gated claim's connection and transaction.
type FlowBatch interface {
	// Read starts a READ COMMITTED transaction and runs qs, each a SELECT,
	// in one round trip, scanning the rows of qs[i] into dests[i] (a
	// pointer to a slice, as sqlx.Select takes).
	Read(ctx context.Context, qs []FlowQuery, dests []any) error
	// Exec runs qs in one round trip inside the transaction and returns
	// the rows each changed.
	Exec(ctx context.Context, qs []FlowQuery) ([]int64, error)
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Close rolls back the transaction if it is still open, and releases
	// the connection. Always called, after Commit too.
	Close()
}

// flowMembers remembers, per group, the members this Store last read in the
// group's row (batch 1 counts their running rows before reading it).
type flowMembers struct {
	mu     sync.Mutex
	byName map[string]string // as argo_flow.members
}

func (m *flowMembers) get(group string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byName[group]
}

func (m *flowMembers) set(group, names string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byName == nil {
		m.byName = map[string]string{}
	}
	m.byName[group] = names
}

// claimFlowBatched is ClaimFlow's transaction in three batches (see
// above). done is false when the ordinary claim must run instead (nothing
// was changed then).
func (s *Store) claimFlowBatched(ctx context.Context, fb FlowBatcher, c FlowClaim, scope string, dueArgs []any) (out FlowClaimResult, done bool, err error) {
	b, ok, err := fb.BeginFlowBatch(ctx)
	if err != nil || !ok {
		return out, false, err
	}
	defer b.Close()
	guess := FlowState{Members: s.flowMembers.get(c.Group)}
	guess.addMembers(c.Names)
	members := guess.MemberNames()
	_, memberArgs := InList(members)
	var rows []FlowState
	var cands []struct {
		Task
		Running int `db:"flow_running"`
	}
	var fallbacks []*Task
	qs := []FlowQuery{{s.sql.FlowLockRead, []any{c.Group}}}
	dests := []any{&rows}
	if c.Policy.Limit > 0 {
		qs = append(qs, FlowQuery{s.sql.FlowCandidatesCounted(StateSet(WaitingStates...), scope, len(members)),
			append(append(slices.Clip(memberArgs), dueArgs...), c.Limit)})
	} else {
		qs = append(qs, FlowQuery{s.sql.FlowCandidates(StateSet(WaitingStates...), scope), append(slices.Clip(dueArgs), c.Limit)})
	}
	dests = append(dests, &cands)
	qs = append(qs, FlowQuery{s.sql.FlowCandidates(StateSet(StateExhausted), scope), append(slices.Clip(dueArgs), c.Limit)})
	dests = append(dests, &fallbacks)
	if err := b.Read(ctx, qs, dests); err != nil {
		return out, false, err
	}
	if c.BeforeTake != nil && len(cands) > 0 {
		// A test's concurrent writer (there is no *sqlx.Tx here: nil).
		ts := make([]*Task, len(cands))
		for i := range cands {
			ts[i] = &cands[i].Task
		}
		if err := c.BeforeTake(ctx, nil, ts); err != nil {
			return out, false, err
		}
	}
	if len(rows) != 1 {
		return out, false, nil // the group's row is not there yet
	}
	st := &rows[0]
	s.flowMembers.set(c.Group, st.Members)
	read := *st
	st.addMembers(c.Names)
	if !slices.Equal(st.MemberNames(), members) {
		return out, false, nil // counted without a member another instance added
	}
	running := 0
	var oldestDue Millis
	for i := range cands {
		running = cands[i].Running
		oldestDue = earlierDue(oldestDue, cands[i].ExecuteTime)
	}
	admit, probe, wakeAt := st.Admit(c.Policy, c.Now, len(cands), running+st.grantedSlots(c.Owner, c.Now), oldestDue)
	var grantUntil Millis
	if len(cands) > 0 { // else running was not counted
		grantUntil = st.decideGrant(c, running)
	}
	attempts := make([]*Task, admit)
	for i := range admit {
		attempts[i] = &cands[i].Task
	}
	var probeID int64
	if probe && len(attempts) > 0 {
		probeID = attempts[0].ID
	}
	st.Took(c.Policy, c.Now, len(attempts), probe, probeID, oldestDue)
	if n := c.Limit - len(attempts); len(fallbacks) > n {
		fallbacks = fallbacks[:n]
	}
	took := append(attempts, fallbacks...)
	var writes []FlowQuery
	if len(took) > 0 {
		byID := SortedByID(took)
		args := []any{c.Owner, c.LeaseUntil, c.Now}
		for _, t := range byID {
			args = append(args, t.ID)
		}
		for _, t := range byID {
			args = append(args, t.ShardKey)
		}
		for _, t := range byID {
			args = append(args, t.ID, t.State, t.ExecuteTimes)
		}
		writes = append(writes, FlowQuery{s.sql.FlowTakeAll(len(byID)), append(args, c.Now, c.Now)})
	}
	if len(took) > 0 || *st != read {
		writes = append(writes, FlowQuery{s.sql.FlowWrite, st.flowWriteArgs()})
	}
	if len(writes) > 0 {
		changed, err := b.Exec(ctx, writes)
		if err != nil {
			return out, false, err
		}
		if len(took) > 0 && (len(changed) != len(writes) || changed[0] != int64(len(took))) {
			return out, false, nil // a candidate changed since the read: rolled back
		}
		if err := b.Commit(ctx); err != nil {
			return out, false, ClaimUnknown(s.d, err, c.Owner, c.Now, c.LeaseUntil, took)
		}
	}
	return FlowClaimResult{Tasks: took, WakeAt: wakeAt, Breaker: st.Breaker, GrantUntil: grantUntil}, true, nil
}
