package gen

import (
	"github.com/dave/jennifer/jen"
)

// Every task gets a dependent wrapper, FDurableAfter(ctx, after, args…)
// (int64, error): the call runs after the tasks whose ids after lists
// (runtime.Call.After; docs/dependencies.md), and its own task id is
// returned, for a later call to depend on. With no ids it is an ordinary
// durable call that returns its id.

// afterWrapper writes t's FDurableAfter; recv is its func keyword (with
// the receiver of a method task), params the wrapper's parameters after the
// context, callArgs those of the submit helpers (the order key last when
// the task has order-by=).
func (e *emitter) afterWrapper(t *task, recv *jen.Statement, params, callArgs []jen.Code) {
	args := callArgs
	if t.orderBy == nil {
		args = append(args[:len(args):len(args)], jen.Lit(""))
	}
	e.doc("%s stores a call of %s that runs only after every task of after (ids) has succeeded or recovered, and returns its task id; if one of them ends dead or discarded, the call ends skipped (docs/dependencies.md). With no ids it is %s returning the task id. An error wrapping runtime.ErrNotPersisted means the call was not stored and will not run; runtime.ErrDependency, that after named a task that does not exist or has failed already.", t.wrapperAfter, t.display(), t.wrapper)
	e.f.Add(recv).Id(t.wrapperAfter).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType()), jen.Id("after").Index().Int64()}, params...)...).Params(jen.Int64(), jen.Error()).Block(
		jen.Return(jen.Id(e.p.internal.submitAfter).Call(append(append([]jen.Code{e.withTenant(t, jen.Id("ctx"))}, args...), jen.Id("after"))...)),
	)
}

// afterHelper writes the package's helper behind the FDurableAfter wrappers.
func (e *emitter) afterHelper() {
	in := e.p.internal
	pkg := e.pkg.Name()
	params := []jen.Code{jen.Id("ctx").Add(ctxType()), jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String(), jen.Id("args").Any(),
		jen.List(jen.Id("shardBy"), jen.Id("uniqueKey"), jen.Id("orderKey")).String(), jen.Id("after").Index().Int64()}
	rest := []jen.Code{jen.Id("ctx"), jen.Id(in.runtime).Dot("Load").Call(), jen.Lit(pkg + ".").Op("+").Id("register"), jen.Id("def"), jen.Id("args"),
		jen.Id("shardBy"), jen.Id("uniqueKey"), jen.Id("orderKey"), jen.Id("after")}
	e.doc("%s stores a call that runs after the tasks of after and returns its task id.", in.submitAfter)
	e.f.Func().Id(in.submitAfter).Params(params...).Params(jen.Int64(), jen.Error()).Block(
		jen.Return(e.rt("SubmitJSONAfter").Call(rest...)),
	)
}
