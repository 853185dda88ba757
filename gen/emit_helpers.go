package gen

import (
	"github.com/dave/jennifer/jen"
)

// helpers writes the package-level functions the wrappers share.
func (e *emitter) helpers() {
	in := e.p.internal
	f := e.f
	pkg := e.pkg.Name()

	f.Line()
	e.doc("%s stores call (runtime.GeneratedCall.Submit) through the runtime the ArgoRegister functions bound.", in.submit)
	f.Func().Id(in.submit).Params(jen.Id("ctx").Add(ctxType()), jen.Id("call").Add(e.rt("GeneratedCall"))).Params(jen.Int64(), jen.Error()).Block(
		jen.List(jen.Id("call").Dot("Runtime"), jen.Id("call").Dot("Register")).Op("=").
			Id(in.runtime).Dot("Load").Call().Op(",").Lit(pkg+".").Op("+").Id("call").Dot("Register"),
		jen.Return(jen.Id("call").Dot("Submit").Call(jen.Id("ctx"))),
	)
	if e.usesKeys() {
		e.doc("%s turns a shard-by, unique-by, tenant-by or order-by parameter into its key.", in.key)
		f.Func().Id(in.key).Params(jen.Id("v").Any()).String().Block(jen.Return(jen.Qual("fmt", "Sprint").Call(jen.Id("v"))))
	}
	if len(e.c.recvs) > 0 {
		e.doc("%s is the error of a method task run before its receiver was bound.", in.unbound)
		f.Func().Id(in.unbound).Params(jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String()).Error().Block(
			e.fit(tabWidth, func(multi bool) jen.Code {
				return jen.Return(jen.Qual("fmt", "Errorf").Add(list("(", ")", multi,
					jen.Lit("argo: task %s: no receiver is bound: call "+pkg+".%s(rt, recv) at start-up"),
					jen.Id("def").Dot("Name"), jen.Id("register"),
				)))
			}),
		)
	}
}

func (e *emitter) usesKeys() bool {
	for _, t := range e.c.tasks {
		if t.shardBy != nil || t.uniqueBy != nil || t.tenantBy != nil || t.orderBy != nil {
			return true
		}
	}
	return false
}
