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
	params := []jen.Code{jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String(), jen.Id("args").Any(), jen.List(jen.Id("shardBy"), jen.Id("uniqueKey")).String()}
	rest := []jen.Code{jen.Lit(pkg + ".").Op("+").Id("register"), jen.Id("def"), jen.Id("args"), jen.Id("shardBy"), jen.Id("uniqueKey")}
	e.doc("%s stores a call and runs it per its task definition.", in.submit)
	f.Func().Id(in.submit).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType())}, params...)...).Error().Block(
		jen.Return(e.rt("SubmitJSON").Call(append([]jen.Code{jen.Id("ctx"), jen.Id(in.runtime).Dot("Load").Call()}, rest...)...)),
	)
	e.doc("%s stores a call in the caller's transaction.", in.submitTx)
	f.Func().Id(in.submitTx).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType()), jen.Id("tx").Add(e.rt("Execer"))}, params...)...).Params(jen.Int64(), jen.Error()).Block(
		jen.Return(e.rt("SubmitJSONTx").Call(append([]jen.Code{jen.Id("ctx"), jen.Id(in.runtime).Dot("Load").Call(), jen.Id("tx")}, rest...)...)),
	)

	e.orderedHelpers()
	e.afterHelper() // after.go
	if e.usesKeys() {
		e.doc("%s turns a shard-by, unique-by or tenant-by parameter into its key.", in.key)
		f.Func().Id(in.key).Params(jen.Id("v").Any()).String().Block(jen.Return(jen.Qual("fmt", "Sprint").Call(jen.Id("v"))))
	}
	if len(e.c.recvs) > 0 {
		e.doc("%s is the error of a method task run before its receiver was bound.", in.unbound)
		f.Func().Id(in.unbound).Params(jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String()).Error().Block(
			jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("argo: task %s: no receiver is bound: call "+pkg+".%s(rt, recv) at start-up"), jen.Id("def").Dot("Name"), jen.Id("register"))),
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
