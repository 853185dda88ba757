// Package alertexpr compiles alert expressions against argotype.AlertEnv. It
// is the one place that says how (environment, boolean result), shared by
// runtime.CompileAlert and by argogen, which checks every alert= expression
// at generate time without linking the runtime and its database drivers.
package alertexpr

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/argo-retry/argo/argotype"
)

// Compile compiles expression against argotype.AlertEnv; it must be boolean.
// The error names the expression.
func Compile(expression string) (*vm.Program, error) {
	p, err := expr.Compile(expression, expr.Env(argotype.AlertEnv{}), expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("alert expression %q: %w", expression, err)
	}
	return p, nil
}
