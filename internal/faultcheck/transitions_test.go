package faultcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// logTransitions says how many recorded moves the transitions invariant
// checked, by move (its coverage).
func logTransitions(t *testing.T, in Input) {
	moves := map[string]int{}
	for _, a := range slices.Concat(in.Attempts, in.Fallbacks) {
		if a.moveRead() {
			moves[a.From.String()+"->"+a.To.String()]++
		}
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(moves)) {
		parts = append(parts, fmt.Sprintf("%s %d", m, moves[m]))
	}
	t.Logf("faultcheck: recorded moves checked: %s", strings.Join(parts, ", "))
}
