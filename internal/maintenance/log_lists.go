package maintenance

import (
	"fmt"
	"slices"
	"strings"
)

// maxLoggedNames is how many names a log line lists before it says how
// many more there are.
const maxLoggedNames = 10

// describeNameCounts lists the names of counts, sorted, each with its count
// when above one ("send-mail (3), charge"), at most maxLoggedNames of them,
// then "and 4 more names".
func describeNameCounts(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	slices.Sort(names)
	shown := names[:min(len(names), maxLoggedNames)]
	parts := make([]string, 0, len(shown)+1)
	for _, n := range shown {
		if c := counts[n]; c > 1 {
			parts = append(parts, fmt.Sprintf("%s (%d)", n, c))
		} else {
			parts = append(parts, n)
		}
	}
	if more := len(names) - len(shown); more > 0 {
		word := "names"
		if more == 1 {
			word = "name"
		}
		parts = append(parts, fmt.Sprintf("and %d more %s", more, word))
	}
	return strings.Join(parts, ", ")
}
