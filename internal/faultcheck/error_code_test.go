package faultcheck

import "testing"

// logErrorCodes says how many history rows and task rows hold an error
// code (the error-code invariant's coverage).
func logErrorCodes(t *testing.T, in Input) {
	var rows, hist int
	for _, r := range in.Rows {
		if r.ErrorCode != "" {
			rows++
		}
	}
	for _, a := range in.Attempts {
		if a.ErrorCode != "" {
			hist++
		}
	}
	t.Logf("faultcheck: %d history rows and %d task rows hold an error code", hist, rows)
}
