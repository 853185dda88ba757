package metrics

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/argo-retry/argo/runtime"
)

// promtool runs Prometheus's rule checker, which scripts/test.sh installs
// (Debian's prometheus package) when it is missing and the tests run as
// root. Without it the test says how to get it and is skipped, except
// under CI (CI=true), where it fails.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found: install it (Debian: sudo apt-get install prometheus) or run make test as root, which installs it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlertRules: the shipped rules file is valid (promtool check rules)
// and each alert fires on series that cross its threshold and not before
// (promtool test rules, testdata/alerts_test.yml).
func TestAlertRules(t *testing.T) {
	if out := promtool(t, "check", "rules", "alerts/argo.rules.yml"); !strings.Contains(out, "SUCCESS: 3 rules found") {
		t.Fatalf("promtool check rules:\n%s", out)
	}
	promtool(t, "test", "rules", "testdata/alerts_test.yml")
}

// TestTransitionRefusedCounted: each refused transition the runtime
// reports is counted under the code WF_STATE_TRANSITION_INVALID, by from
// and to state — the series the ArgoInvalidTransitionsRepeated rule reads.
func TestTransitionRefusedCounted(t *testing.T) {
	m := New(Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	m.TransitionRefused(runtime.StateRunning, runtime.StateSucceeded)
	m.TransitionRefused(runtime.StateRunning, runtime.StateSucceeded)
	m.TransitionRefused(runtime.StateFallingBack, runtime.StateDead)
	want := `
# HELP argo_transitions_refused_total State transitions refused (code WF_STATE_TRANSITION_INVALID): outcomes of stale workers whose task was rescued, requeued, force-failed or discarded meanwhile, and moves the state machine forbids.
# TYPE argo_transitions_refused_total counter
argo_transitions_refused_total{code="WF_STATE_TRANSITION_INVALID",from="falling_back",to="dead"} 1
argo_transitions_refused_total{code="WF_STATE_TRANSITION_INVALID",from="running",to="succeeded"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_transitions_refused_total"); err != nil {
		t.Fatal(err)
	}
}
