package gen

import (
	"github.com/dave/jennifer/jen"
)

// helpers writes the package-level functions the wrappers share.
func (e *emitter) helpers() {
	in := e.p.internal
	f := e.f
	pkg := e.pkg.Name()
	errNP := e.rt("ErrNotPersisted")
	emptyCall := e.rt("Call").Values()

	f.Line()
	e.doc("%s encodes the arguments of a call of def, or says why the call cannot be stored.", in.call)
	f.Func().Id(in.call).Params(
		jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String(), jen.Id("args").Any(), jen.List(jen.Id("shardBy"), jen.Id("uniqueKey")).String(),
	).Params(jen.Op("*").Add(e.rt("Runtime")), e.rt("Call"), jen.Error()).Block(
		jen.Id("rt").Op(":=").Id(in.runtime).Dot("Load").Call(),
		jen.If(jen.Id("rt").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), emptyCall, jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: task %s: no runtime is bound: call "+pkg+".%s at start-up"), errNP, jen.Id("def").Dot("Name"), jen.Id("register"))),
		),
		jen.List(jen.Id("b"), jen.Err()).Op(":=").Qual("encoding/json", "Marshal").Call(jen.Id("args")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), emptyCall, jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: task %s: encoding the arguments: %w"), errNP, jen.Id("def").Dot("Name"), jen.Err())),
		),
		jen.Return(jen.Id("rt"), e.rt("Call").Values(jen.Dict{
			jen.Id("Task"): jen.Id("def"), jen.Id("Args"): jen.Id("b"), jen.Id("ShardBy"): jen.Id("shardBy"), jen.Id("UniqueKey"): jen.Id("uniqueKey"),
		}), jen.Nil()),
	)

	params := []jen.Code{jen.Id("def").Op("*").Add(e.rt("TaskDef")), jen.Id("register").String(), jen.Id("args").Any(), jen.List(jen.Id("shardBy"), jen.Id("uniqueKey")).String()}
	pass := []jen.Code{jen.Id("def"), jen.Id("register"), jen.Id("args"), jen.Id("shardBy"), jen.Id("uniqueKey")}
	e.doc("%s stores a call and runs it per its task definition.", in.submit)
	f.Func().Id(in.submit).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType())}, params...)...).Error().Block(
		jen.List(jen.Id("rt"), jen.Id("call"), jen.Err()).Op(":=").Id(in.call).Call(pass...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.List(jen.Id("_"), jen.Err()).Op("=").Id("rt").Dot("Submit").Call(jen.Id("ctx"), jen.Id("call")),
		jen.Return(jen.Err()),
	)
	e.doc("%s stores a call in the caller's transaction.", in.submitTx)
	f.Func().Id(in.submitTx).Params(append([]jen.Code{jen.Id("ctx").Add(ctxType()), jen.Id("tx").Add(e.rt("Execer"))}, params...)...).Params(jen.Int64(), jen.Error()).Block(
		jen.List(jen.Id("rt"), jen.Id("call"), jen.Err()).Op(":=").Id(in.call).Call(pass...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(0), jen.Err())),
		jen.Return(jen.Id("rt").Dot("SubmitTx").Call(jen.Id("ctx"), jen.Id("tx"), jen.Id("call"))),
	)

	undecodable := func(err jen.Code) jen.Code { return jen.Return(e.rt("Undecodable").Call(err)) }
	e.doc("%s decodes stored arguments into v. The stored keys must be exactly keys: a row written for another signature of the function is refused with runtime.Undecodable (it waits, visible, for a deploy that decodes it), never run with zero values.", in.decode)
	f.Func().Id(in.decode).Params(jen.Id("args").Index().Byte(), jen.Id("v").Any(), jen.Id("keys").Op("...").String()).Error().Block(
		jen.Var().Id("m").Map(jen.String()).Qual("encoding/json", "RawMessage"),
		jen.If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("args"), jen.Op("&").Id("m")), jen.Err().Op("!=").Nil()).Block(undecodable(jen.Err())),
		jen.For(jen.List(jen.Id("_"), jen.Id("k")).Op(":=").Range().Id("keys")).Block(
			jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("m").Index(jen.Id("k")), jen.Op("!").Id("ok")).Block(
				undecodable(jen.Qual("fmt", "Errorf").Call(jen.Lit("argument %q is missing"), jen.Id("k"))),
			),
		),
		jen.For(jen.Id("k").Op(":=").Range().Id("m")).Block(
			jen.If(jen.Op("!").Qual("slices", "Contains").Call(jen.Id("keys"), jen.Id("k"))).Block(
				undecodable(jen.Qual("fmt", "Errorf").Call(jen.Lit("argument %q is not a parameter"), jen.Id("k"))),
			),
		),
		jen.If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("args"), jen.Id("v")), jen.Err().Op("!=").Nil()).Block(undecodable(jen.Err())),
		jen.Return(jen.Nil()),
	)

	if e.usesKeys() {
		e.doc("%s turns a shard-by or unique-by parameter into its key.", in.key)
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
		if t.shardBy != nil || t.uniqueBy != nil {
			return true
		}
	}
	return false
}
