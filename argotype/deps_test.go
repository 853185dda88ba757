package argotype_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArgotypeImportsOnlyStandardLibrary keeps the package dependency-free:
// argogen imports it, and everything it imports is compiled on a newcomer's
// first `go generate`.
func TestArgotypeImportsOnlyStandardLibrary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list argotype's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	const self = "github.com/argo-retry/argo/argotype"
	for _, path := range strings.Fields(string(out)) {
		if path != self {
			t.Errorf("argotype depends on %s: it may import the standard library only", path)
		}
	}
	if !strings.Contains(string(out), self) {
		t.Fatalf("go list -deps did not list %s itself:\n%s", self, out)
	}
}
