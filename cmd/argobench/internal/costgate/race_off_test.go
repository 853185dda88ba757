//go:build !race

package costgate

const raceEnabled = false
