package gen

import (
	"fmt"
	"go/types"
	"strconv"

	"github.com/dave/jennifer/jen"

	"github.com/argo-retry/argo/argotype"
)

// locals are the names of a closure's locals, chosen not to shadow the
// user's functions the closure calls.
type locals struct{ ctx, args, v, err, r, ev string }

func pickLocals(t *task) locals {
	avoid := map[string]bool{}
	if t.recv == nil {
		avoid[t.fn.Name()] = true
	}
	for _, h := range []*hook{t.fallback, t.action} {
		if h != nil && !h.method {
			avoid[h.fn.Name()] = true
		}
	}
	pick := func(base string) string {
		name := base
		for i := 2; avoid[name]; i++ {
			name = base + strconv.Itoa(i)
		}
		avoid[name] = true
		return name
	}
	return locals{ctx: pick("ctx"), args: pick("args"), v: pick("v"), err: pick("err"), r: pick("r"), ev: pick("ev")}
}

// init writes the func init that sets Run, Fallback and AlertAction (set
// there rather than in the TaskDef literal, so that an annotated function
// may call its own or another task's wrapper without an initialization cycle).
func (e *emitter) init(t *task) {
	l := pickLocals(t)
	in := e.p.internal
	def := jen.Id(t.defVar)
	// receiver loads the bound receiver into r, for method calls.
	receiver := func() []jen.Code {
		return []jen.Code{
			jen.Id(l.r).Op(":=").Id(t.recv.recvVar).Dot("Load").Call(),
			jen.If(jen.Id(l.r).Op("==").Nil()).Block(jen.Return(jen.Id(in.unbound).Call(def, jen.Lit(t.recv.register)))),
		}
	}
	decode := func() []jen.Code {
		keys := []jen.Code{jen.Id(l.args), jen.Op("&").Id(l.v)}
		for _, p := range t.params {
			keys = append(keys, jen.Lit(p.key))
		}
		return []jen.Code{
			jen.Var().Id(l.v).Id(t.argsType),
			e.fit(2*tabWidth, func(multi bool) jen.Code {
				return jen.If(jen.Id(l.err).Op(":=").Add(e.rt("DecodeJSON")).Add(list("(", ")", multi, keys...)), jen.Id(l.err).Op("!=").Nil()).
					Block(jen.Return(jen.Id(l.err)))
			}),
		}
	}
	call := func(fn *types.Func, method, hasCtx bool) jen.Code {
		var callee *jen.Statement
		if method {
			callee = jen.Id(l.r).Dot(fn.Name())
		} else {
			callee = jen.Id(fn.Name())
		}
		var args []jen.Code
		if hasCtx {
			args = append(args, jen.Id(l.ctx))
		}
		for i, p := range t.params {
			a := jen.Id(l.v).Dot(p.field)
			if t.variadic && i == len(t.params)-1 {
				a.Op("...")
			}
			args = append(args, a)
		}
		return e.fit(2*tabWidth, func(multi bool) jen.Code {
			return jen.Return(callee.Clone().Add(list("(", ")", multi, args...)))
		})
	}
	handler := func(fn *types.Func, method, hasCtx bool) []jen.Code {
		var body []jen.Code
		if method {
			body = append(body, receiver()...)
		}
		body = append(body, decode()...)
		return append(body, call(fn, method, hasCtx))
	}

	var stmts []jen.Code
	stmts = append(stmts, def.Clone().Dot("Run").Op("=").Func().Params(
		jen.Id(l.ctx).Add(ctxType()), jen.Id(l.args).Index().Byte(),
	).Error().Block(handler(t.fn, t.recv != nil, t.hasCtx)...))
	if h := t.fallback; h != nil {
		stmts = append(stmts, def.Clone().Dot("Fallback").Op("=").Func().Params(
			jen.Id(l.ctx).Add(ctxType()), jen.Id(l.args).Index().Byte(), jen.Id("_").Error(),
		).Error().Block(handler(h.fn, h.method, h.hasCtx)...))
	}
	if h := t.action; h != nil {
		if h.method {
			body := append(receiver(), jen.Return(jen.Id(l.r).Dot(h.fn.Name()).Call(jen.Id(l.ctx), jen.Id(l.ev))))
			stmts = append(stmts, def.Clone().Dot("AlertAction").Op("=").Func().Params(
				jen.Id(l.ctx).Add(ctxType()), jen.Id(l.ev).Add(e.rt("AlertEvent")),
			).Error().Block(body...))
		} else {
			stmts = append(stmts, def.Clone().Dot("AlertAction").Op("=").Id(h.fn.Name()))
		}
	}
	e.f.Func().Id("init").Params().Block(stmts...)
}

// wrappers writes FDurable, FDurableTx and FDurableAfter (after.go), each
// a runtime.GeneratedCall literal handed to the package's submit helper.
func (e *emitter) wrappers(t *task) {
	in := e.p.internal
	register := e.p.register
	if t.recv != nil {
		register = t.recv.register
	}
	var params, argFields []jen.Code
	for i, p := range t.params {
		argFields = append(argFields, jen.Id(p.field).Op(":").Id(p.wrap))
		params = append(params, jen.Id(p.wrap).Add(e.paramType(p.typ, t.variadic && i == len(t.params)-1)))
	}
	keyOf := func(p *param) jen.Code { return jen.Id(in.key).Call(jen.Id(p.wrap)) }
	// call renders the runtime.GeneratedCall of t with extra fields (Tx,
	// After) before Register; its fields sit two tabs in, after a key
	// aligned to "UniqueKey: ".
	call := func(extra ...jen.Code) jen.Code {
		args := e.fit(2*tabWidth+len("UniqueKey: "), func(multi bool) jen.Code {
			return jen.Op("&").Id(t.argsType).Add(list("{", "}", multi, argFields...))
		})
		pairs := []jen.Code{kv("Task", jen.Id(t.defVar)), kv("Args", args)}
		for _, k := range []struct {
			field string
			p     *param
		}{{"ShardBy", t.shardBy}, {"UniqueKey", t.uniqueBy}, {"OrderKey", t.orderBy}, {"Tenant", t.tenantBy}} {
			if k.p != nil {
				pairs = append(pairs, kv(k.field, keyOf(k.p)))
			}
		}
		pairs = append(pairs, extra...)
		pairs = append(pairs, kv("Register", jen.Lit(register)))
		return e.rt("GeneratedCall").Add(fields(pairs...))
	}
	recv := func() *jen.Statement {
		if t.recv == nil {
			return jen.Func()
		}
		rt := e.qual(t.recv.obj.Pkg(), t.recv.obj.Name())
		if t.ptrRecv {
			rt = jen.Op("*").Add(rt)
		}
		return jen.Func().Params(rt)
	}
	// signature renders the wrapper's func line, its parameters one a line
	// when they do not fit on it (with the " {" the body adds: fit's 2).
	signature := func(name string, lead []jen.Code, results jen.Code) jen.Code {
		return e.fit(len(" {"), func(multi bool) jen.Code {
			return recv().Id(name).Add(list("(", ")", multi, append(lead, params...)...)).Add(results)
		})
	}
	ctxParam := []jen.Code{}
	ctxArg := jen.Qual("context", "Background").Call()
	if t.hasCtx {
		ctxParam = []jen.Code{jen.Id("ctx").Add(ctxType())}
		ctxArg = jen.Id("ctx")
	}
	ctx := jen.Id("ctx").Add(ctxType())
	idErr := jen.Params(jen.Int64(), jen.Error())
	f := e.f
	e.doc("%s", e.wrapperDoc(t))
	f.Add(signature(t.wrapper, ctxParam, jen.Error())).Block(
		jen.List(jen.Id("_"), jen.Err()).Op(":=").Id(in.submit).Call(ctxArg, call()),
		jen.Return(jen.Err()),
	)
	e.doc("%s stores a call of %s in tx, an *sql.Tx (or *sqlx.Tx) on the runtime's database, and returns its task id: the task runs once tx commits and is gone if tx rolls back (the outbox pattern).", t.wrapperTx, t.display())
	f.Add(signature(t.wrapperTx, []jen.Code{ctx, jen.Id("tx").Add(e.rt("Execer"))}, idErr)).Block(
		jen.Return(jen.Id(in.submit).Call(jen.Id("ctx"), call(kv("Tx", jen.Id("tx"))))),
	)
	e.afterWrapper(t, signature(t.wrapperAfter, []jen.Code{ctx, jen.Id("after").Index().Int64()}, idErr), call(kv("After", jen.Id("after")))) // after.go
}

func (e *emitter) wrapperDoc(t *task) string {
	s := t.spec
	var when string
	switch {
	case s.mode == argotype.Scheduled && s.firstDelay > 0:
		when = fmt.Sprintf("runs it on the runtime's worker pool %s later", s.firstDelay)
	case s.mode == argotype.Scheduled:
		when = "runs it on the runtime's worker pool at its next poll"
	case s.thread == argotype.Sync:
		when = "runs the first attempt in the calling goroutine, returning its error (a *runtime.AttemptError)"
	default:
		when = "runs it on the runtime's worker pool"
	}
	var retries string
	switch n := s.policy.MaxAttempts - 1; {
	case s.policy.MaxAttempts == argotype.Unlimited:
		retries = "retrying failures until it succeeds"
	case n == 0:
		retries = "without retries"
	case n == 1:
		retries = "retrying a failure once"
	default:
		retries = "retrying failures up to " + strconv.Itoa(n) + " times"
	}
	doc := fmt.Sprintf("%s is the durable form of %s: it stores the call as task %s, then %s, %s per its //argo:retry directive.", t.wrapper, t.display(), t.name, when, retries)
	if t.fallback != nil {
		doc += fmt.Sprintf(" When retries are exhausted it calls %s with the same arguments.", t.fallback.fn.Name())
	}
	doc += " An error wrapping runtime.ErrNotPersisted means the call was not stored and will not run."
	return doc
}
