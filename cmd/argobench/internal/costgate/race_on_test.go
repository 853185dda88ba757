//go:build race

package costgate

// raceEnabled: the race detector slows the runtime enough to change how
// its poller's wake-ups coalesce, so TestCostBaseline only runs the
// workloads then (scripts/test.sh runs the comparison without -race).
const raceEnabled = true
