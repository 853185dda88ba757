package gen

import (
	"github.com/dave/jennifer/jen"
)

// Every task gets a dependent wrapper, FDurableAfter(ctx, after, args…)
// (int64, error): the call runs after the tasks whose ids after lists
// (runtime.Call.After; docs/dependencies.md), and its own task id is
// returned, for a later call to depend on. With no ids it is an ordinary
// durable call that returns its id.

// afterWrapper writes t's FDurableAfter: signature is its func line, call
// the runtime.GeneratedCall it submits (with After).
func (e *emitter) afterWrapper(t *task, signature, call jen.Code) {
	e.doc("%s stores a call of %s that runs only after every task of after (ids) has succeeded or recovered, and returns its task id; if one of them ends dead or discarded, the call ends skipped (docs/dependencies.md). With no ids it is %s returning the task id. An error wrapping runtime.ErrNotPersisted means the call was not stored and will not run; runtime.ErrDependency, that after named a task that does not exist or has failed already.", t.wrapperAfter, t.display(), t.wrapper)
	e.f.Add(signature).Block(
		jen.Return(jen.Id(e.p.internal.submit).Call(jen.Id("ctx"), call)),
	)
}
