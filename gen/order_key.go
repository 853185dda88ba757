package gen

import "github.com/dave/jennifer/jen"

// The order-by=P key (docs/semantics.md, "Ordered keys"): calls with the
// same value of parameter P (as fmt.Sprint gives it) run one at a time, in
// submit order, across instances. The wrappers of such a task submit
// through runtime.SubmitJSONOrdered; other tasks' code is unchanged.

func init() {
	keys = append(keys, "order-by")
	setters["order-by"] = identSetter(func(s *spec) *string { return &s.orderBy }, "the name of a parameter")
}

// orderBy resolves order-by=P to a stored parameter, and refuses it on a
// task under flow control (whose gated claim does not keep the order).
func (c *checker) orderBy(t *task) {
	s := t.spec
	if s.orderBy == "" {
		return
	}
	if s.flow.declaredAny {
		c.at(s.pos["order-by"], "order-by: a task under flow control (limit=, rate=, breaker=) cannot be ordered: its gated claim does not keep the order; drop one of them")
		return
	}
	t.orderBy = c.keyParam(t, "order-by", s.orderBy)
}

// usesOrder reports whether a task of the package has order-by.
func (e *emitter) usesOrder() bool {
	for _, t := range e.c.tasks {
		if t.orderBy != nil {
			return true
		}
	}
	return false
}

// orderedHelpers writes the submit helpers of ordered tasks: those of
// helpers() with the order key last.
func (e *emitter) orderedHelpers() {
	if !e.usesOrder() {
		return
	}
	in := e.p.internal
	f := e.f
	pkg := e.pkg.Name()
	params := []jen.Code{jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String(), jen.Id("args").Any(), jen.List(jen.Id("shardBy"), jen.Id("uniqueKey"), jen.Id("orderKey")).String()}
	rest := []jen.Code{jen.Lit(pkg + ".").Op("+").Id("register"), jen.Id("def"), jen.Id("args"), jen.Id("shardBy"), jen.Id("uniqueKey"), jen.Id("orderKey")}
	e.doc("%s stores a call with its order key and runs it in the key's order.", in.submitOrdered)
	f.Func().Id(in.submitOrdered).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType())}, params...)...).Error().Block(
		jen.Return(e.rt("SubmitJSONOrdered").Call(append([]jen.Code{jen.Id("ctx"), jen.Id(in.runtime).Dot("Load").Call()}, rest...)...)),
	)
	e.doc("%s stores a call with its order key in the caller's transaction.", in.submitOrderedTx)
	f.Func().Id(in.submitOrderedTx).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType()), jen.Id("tx").Add(e.rt("Execer"))}, params...)...).Params(jen.Int64(), jen.Error()).Block(
		jen.Return(e.rt("SubmitJSONOrderedTx").Call(append([]jen.Code{jen.Id("ctx"), jen.Id(in.runtime).Dot("Load").Call(), jen.Id("tx")}, rest...)...)),
	)
}
