package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/argo-retry/argo/internal/storage"
)

// MatchTaskName returns the names among names that pattern selects: the
// name equal to pattern if there is one; otherwise every name ending in
// pattern right after a '/' or a '.' (so "Systems.PrintLabel",
// "PrintLabel" and "integration.Systems.PrintLabel" all select
// "example.com/warehouse/integration.Systems.PrintLabel"). A short pattern
// that several names end in selects all of them.
func MatchTaskName(names []string, pattern string) []string {
	if pattern == "" {
		return nil
	}
	for _, n := range names {
		if n == pattern {
			return []string{n}
		}
	}
	var out []string
	for _, n := range names {
		if len(n) > len(pattern) && strings.HasSuffix(n, pattern) {
			if b := n[len(n)-len(pattern)-1]; b == '/' || b == '.' {
				out = append(out, n)
			}
		}
	}
	return out
}

// TaskNames returns the distinct task names in argo_task, sorted.
func (in *Inspector) TaskNames(ctx context.Context) ([]string, error) {
	return in.store.TaskNames(ctx)
}

// resolveNames turns f into the store's filter, its NameSuffix resolved
// into Names (MatchTaskName over the names in the table). A suffix that
// selects no name matches no task.
func (in *Inspector) resolveNames(ctx context.Context, f Filter) (storage.Filter, error) {
	sf := f.toStorage()
	if f.ErrorCode != "" {
		if err := CheckErrorCode(f.ErrorCode); err != nil {
			return sf, fmt.Errorf("filter by error code: %w", err)
		}
	}
	if f.NameSuffix == "" {
		return sf, nil
	}
	names, err := in.TaskNames(ctx)
	if err != nil {
		return sf, err
	}
	sf.Names = MatchTaskName(names, f.NameSuffix)
	if len(sf.Names) == 0 {
		sf.Names = []string{f.NameSuffix} // no such name: match nothing
	}
	return sf, nil
}
