package alertexpr

import (
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/argo-retry/argo/argotype"
)

// TestAlertCompileUsesTheEnvNames proves an expression sees AlertEnv under
// its expr tag names and evaluates to a bool.
func TestAlertCompileUsesTheEnvNames(t *testing.T) {
	p, err := Compile(`executeTimes >= 3 && lastError contains "timeout" && !exhausted`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  argotype.AlertEnv
		want bool
	}{
		{argotype.AlertEnv{ExecuteTimes: 3, LastError: "read timeout"}, true},
		{argotype.AlertEnv{ExecuteTimes: 2, LastError: "read timeout"}, false},
		{argotype.AlertEnv{ExecuteTimes: 3, LastError: "read timeout", Exhausted: true}, false},
	} {
		out, err := expr.Run(p, c.env)
		if err != nil {
			t.Fatal(err)
		}
		if out != c.want {
			t.Errorf("%+v: got %v, want %v", c.env, out, c.want)
		}
	}
}

// TestAlertCompileRefuses proves an unknown name and a non-boolean result are
// compile errors naming the expression (argogen reports them at generate time).
func TestAlertCompileRefuses(t *testing.T) {
	for _, bad := range []string{`ExecuteTimes >= 3`, `executeCount >= 3`, `executeTimes`} {
		_, err := Compile(bad)
		if err == nil {
			t.Errorf("%s: compiled; want an error", bad)
			continue
		}
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: error %q does not name the expression", bad, err)
		}
	}
}
