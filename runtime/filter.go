package runtime

import (
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Filter selects tasks for the Inspector's List, Count, CountUpTo,
// RequeueWhere and DiscardWhere. Every criterion set must hold (they are
// ANDed); the zero Filter has none and selects every task, newest id first,
// without a limit.
type Filter struct {
	// States selects the tasks in one of these states (none: any state).
	States []State
	// Name selects the tasks of this task name, exactly ("": any name).
	Name string
	// NameSuffix selects the tasks of the name equal to it or, when no name
	// is, of every name that ends in it right after a '/' or a '.'
	// (MatchTaskName over the names in argo_task; "": any name). A suffix
	// that selects no name selects no task. argoctl's -name is this.
	NameSuffix string
	// Names selects the tasks of one of these task names, exactly (none:
	// any name).
	Names []string
	// Shard selects the tasks of this shard key (nil: any shard).
	Shard *int
	// Since and Until select the tasks whose last state change
	// (gmt_modified) is at or after Since and before Until; a zero time
	// sets no bound.
	Since, Until time.Time
	// ErrorContains selects the tasks whose error message or fallback error
	// message contains it, ignoring case; %, _ and \ are literal
	// characters, not wildcards ("": any).
	ErrorContains string
	// IDs selects the task rows of these ids (none: any id).
	IDs []int64
	// NotRequeued selects only the tasks not requeued into a new task
	// (requeued_to is NULL). RequeueWhere and DiscardWhere set it. Default
	// false: requeued tasks are selected too.
	NotRequeued bool
	// Tenant selects the tasks of this tenant, exactly ("": any tenant).
	Tenant string
	// BeforeID pages by key: only ids below it (0: no bound). With Limit,
	// the next page of a newest-first listing is BeforeID = the last id
	// shown; unlike Offset, rows inserted meanwhile neither repeat nor skip
	// a row.
	BeforeID int64
	// NameContains selects the tasks whose name contains it, ignoring case;
	// %, _ and \ are literal characters, not wildcards ("": any name).
	NameContains string
	// UniqueKey selects the tasks of this unique key (argo_task.unique_key),
	// exactly ("": any key).
	UniqueKey string
	// ErrorCode selects the tasks whose last failed attempt returned this
	// code (runtime.Coded; argo_task.error_code), exactly, byte for byte
	// ("": any code). A code Coded would refuse is refused here too, with
	// the rule (CheckErrorCode). argoctl's -code is this.
	ErrorCode string
	// Limit and Offset page List, newest id first: at most Limit tasks
	// (0: no limit) after skipping Offset of them (0: none). Count,
	// CountUpTo, RequeueWhere and DiscardWhere ignore them.
	Limit, Offset int
}

// Empty reports whether f has no criteria, so that it would match every
// task (Limit and Offset are paging, not criteria). argoctl refuses to
// change rows by an empty filter without --all.
func (f Filter) Empty() bool {
	return f.NameSuffix == "" && f.toStorage().Empty()
}

// toStorage is f as the store takes it, every field but NameSuffix (which
// only the Inspector resolves, into Names: resolveNames).
func (f Filter) toStorage() storage.Filter {
	return storage.Filter{
		States:        f.States,
		Name:          f.Name,
		Names:         f.Names,
		Shard:         f.Shard,
		Since:         f.Since,
		Until:         f.Until,
		ErrorContains: f.ErrorContains,
		IDs:           f.IDs,
		NotRequeued:   f.NotRequeued,
		Tenant:        f.Tenant,
		BeforeID:      f.BeforeID,
		NameContains:  f.NameContains,
		UniqueKey:     f.UniqueKey,
		ErrorCode:     f.ErrorCode,
		Limit:         f.Limit,
		Offset:        f.Offset,
	}
}
