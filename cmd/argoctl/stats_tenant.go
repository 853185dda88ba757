package main

import (
	"context"

	"github.com/argo-retry/argo/runtime"
)

// tenantStats writes the counts per state of one tenant's tasks (stats -tenant).
func tenantStats(ctx context.Context, e *env, in *runtime.Inspector, tenant string) error {
	counts, err := in.CountByStateOfTenant(ctx, tenant)
	if err != nil {
		return err
	}
	total := 0
	byState := map[string]int{}
	for _, s := range runtime.AllStates {
		byState[s.String()] = counts[s]
		total += counts[s]
	}
	if e.json() {
		return writeJSON(e.stdout, map[string]any{"tenant": tenant, "by_state": byState, "total": total})
	}
	w := newTable(e.stdout)
	row(w, "STATE", "TASKS")
	for _, s := range runtime.AllStates {
		row(w, s, counts[s])
	}
	row(w, "total", total)
	row(w, "tenant", tenant)
	return w.Flush()
}
