//go:build race

package main

// raceEnabled: the race detector slows the embedded SQLite several times
// over, so TestBenchSmall leaves out the optional what-if workload.
const raceEnabled = true
