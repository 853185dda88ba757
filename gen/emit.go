package gen

import (
	"bytes"
	"fmt"
	"go/types"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/imports"

	"github.com/argo-retry/argo/argotype"
)

// emitter writes the generated file with jennifer.
type emitter struct {
	c   *checker
	p   *plan
	f   *jen.File
	pkg *types.Package
}

// emit renders the generated file for the checked tasks.
func emit(c *checker, p *plan) ([]byte, error) {
	e := &emitter{c: c, p: p, pkg: c.pkg, f: jen.NewFilePathName(c.pkg.Path(), c.pkg.Name())}
	for path, name := range p.imports {
		if name == p.real[path] {
			e.f.ImportName(path, name)
		} else {
			e.f.ImportAlias(path, name)
		}
	}
	e.f.HeaderComment(header)
	e.f.HeaderComment("//")
	e.f.HeaderComment("// Durable wrappers for the //argo:retry functions of package " + c.pkg.Name() + ".")
	e.f.HeaderComment("// Regenerate with go generate after changing a directive or an annotated signature.")
	e.registration()
	for _, t := range c.tasks {
		e.task(t)
	}
	e.helpers()
	var b bytes.Buffer
	if err := e.f.Render(&b); err != nil {
		return nil, fmt.Errorf("argogen: rendering the generated file (a bug in argogen): %w", err)
	}
	// jennifer writes one sorted import block; group it as goimports does
	// (the standard library, then the rest), changing nothing else.
	src, err := imports.Process("argo_gen.go", b.Bytes(), &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: tabWidth})
	if err != nil {
		return nil, fmt.Errorf("argogen: grouping the generated file's imports (a bug in argogen): %w", err)
	}
	return src, nil
}

// doc writes a // comment wrapped at 100 columns.
func (e *emitter) doc(format string, args ...any) {
	e.f.Comment(wrap(fmt.Sprintf(format, args...), 97))
}

func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
			b.WriteString("// ")
		case line+1+len(w) > width:
			b.WriteString("\n// ")
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// rt, ctx, … qualify the generated code's own imports.
func (e *emitter) rt(name string) *jen.Statement { return jen.Qual(runtimePath, name) }
func (e *emitter) qual(p *types.Package, name string) *jen.Statement {
	if p == nil {
		return jen.Id(name)
	}
	return jen.Qual(p.Path(), name)
}
func ctxType() *jen.Statement { return jen.Qual("context", "Context") }

// fields renders {k: v, …} one pair a line, in the given order.
func fields(pairs ...jen.Code) *jen.Statement {
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, pairs...)
}

func kv(k string, v jen.Code) jen.Code { return jen.Id(k).Op(":").Add(v) }

// registration writes ArgoRegister and ArgoRegister<T>.
func (e *emitter) registration() {
	in := e.p.internal
	f := e.f
	e.doc("%s is the runtime the wrappers of this package submit through; the %s functions bind it.", in.runtime, "ArgoRegister")
	f.Var().Id(in.runtime).Qual("sync/atomic", "Pointer").Types(e.rt("Runtime"))

	if e.p.register != "" {
		var defs []jen.Code
		var names []string
		for _, t := range e.c.tasks {
			if t.recv == nil {
				defs = append(defs, jen.Id(t.defVar))
				names = append(names, t.display())
			}
		}
		e.doc("%s registers the durable functions of package %s (%s) with rt and binds rt for their wrappers and for the package's other wrappers. Call it once at start-up, before any wrapper.",
			e.p.register, e.pkg.Name(), strings.Join(names, ", "))
		f.Func().Id(e.p.register).Params(jen.Id("rt").Op("*").Add(e.rt("Runtime"))).Error().Block(
			jen.If(jen.Id("rt").Op("==").Nil()).Block(
				jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.pkg.Name()+"."+e.p.register+": nil runtime"))),
			),
			e.registerCall(defs),
			jen.Id(in.runtime).Dot("Store").Call(jen.Id("rt")),
			jen.Return(jen.Nil()),
		)
	}

	for _, r := range e.c.recvs {
		if len(r.tasks) == 0 {
			continue
		}
		var defs []jen.Code
		var names []string
		for _, t := range r.tasks {
			defs = append(defs, jen.Id(t.defVar))
			names = append(names, t.fn.Name())
		}
		recvT := e.qual(r.obj.Pkg(), r.obj.Name())
		store := jen.Op("&").Id("recv")
		var nilCheck jen.Code = jen.Null()
		if r.ptr {
			recvT = jen.Op("*").Add(recvT)
			store = jen.Id("recv")
			nilCheck = jen.If(jen.Id("recv").Op("==").Nil()).Block(
				jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.pkg.Name() + "." + r.register + ": nil receiver"))),
			)
		}
		e.doc("%s holds the receiver bound by %s.", r.recvVar, r.register)
		f.Var().Id(r.recvVar).Qual("sync/atomic", "Pointer").Types(e.qual(r.obj.Pkg(), r.obj.Name()))
		e.doc("%s binds recv as the receiver of the durable methods of %s (%s), registers them with rt, and binds rt for the package's wrappers. Call it once at start-up, before any wrapper; until it is called, tasks of these methods wait in the table with a \"no handler\" error.",
			r.register, r.obj.Name(), strings.Join(names, ", "))
		f.Func().Id(r.register).Params(jen.Id("rt").Op("*").Add(e.rt("Runtime")), jen.Id("recv").Add(recvT)).Error().Block(
			jen.If(jen.Id("rt").Op("==").Nil()).Block(
				jen.Return(jen.Qual("errors", "New").Call(jen.Lit(e.pkg.Name()+"."+r.register+": nil runtime"))),
			),
			nilCheck,
			jen.Id(r.recvVar).Dot("Store").Call(store),
			e.registerCall(defs),
			jen.Id(in.runtime).Dot("Store").Call(jen.Id("rt")),
			jen.Return(jen.Nil()),
		)
	}
}

// task writes everything generated for one directive.
func (e *emitter) task(t *task) {
	f := e.f
	f.Line()
	e.doc("%s is the task definition of %s, from its //argo:retry directive.", t.defVar, t.display())
	f.Var().Id(t.defVar).Op("=").Op("&").Add(e.rt("TaskDef")).Add(e.def(t))

	e.doc("The build breaks here when a signature no longer matches its directive: run go generate.")
	f.Add(e.signatureCheck(t.fn, e.recvType(t.recv, t.ptrRecv), e.funcRef(t.fn, t.recv, t.ptrRecv)))
	for _, h := range []*hook{t.fallback, t.action} {
		if h != nil {
			var recv jen.Code
			if h.method {
				recv = e.recvType(t.recv, h.ptr)
			}
			f.Add(e.signatureCheck(h.fn, recv, e.funcRef(h.fn, t.recv, h.ptr)))
		}
	}

	e.doc("%s holds the arguments of one call of %s, stored as JSON in argo_task.task_parameter.", t.argsType, t.display())
	f.Type().Id(t.argsType).StructFunc(func(g *jen.Group) {
		for _, p := range t.params {
			g.Id(p.field).Add(e.typ(p.typ)).Tag(map[string]string{"json": p.key})
		}
	})

	e.init(t)
	e.wrappers(t)
}

// def renders the static TaskDef fields.
func (e *emitter) def(t *task) jen.Code {
	s := t.spec
	mode, thread := "Immediate", "Async"
	if s.mode == argotype.Scheduled {
		mode = "Scheduled"
	}
	if s.thread == argotype.Sync {
		thread = "Sync"
	}
	pairs := []jen.Code{
		kv("Name", lit(defIndent, t.name)),
		kv("MethodName", lit(defIndent, t.display())),
		kv("Signature", lit(defIndent, clip(types.ObjectString(t.fn, pkgName)))),
		kv("ParameterTypes", lit(defIndent, clip(e.parameterTypes(t)))),
		kv("Mode", e.rt(mode)),
		kv("Thread", e.rt(thread)),
	}
	if s.firstDelay > 0 {
		pairs = append(pairs, kv("Delay", duration(s.firstDelay)))
	}
	pairs = append(pairs, kv("Policy", e.rt("RetryPolicy").Add(e.policy(s.policy))))
	if t.fallback != nil {
		pairs = append(pairs, kv("FallbackName", lit(defIndent, e.hookName(t, t.fallback))))
	}
	if s.alert != "" {
		pairs = append(pairs, kv("Alert", lit(defIndent, s.alert)))
	}
	if t.action != nil {
		pairs = append(pairs, kv("AlertActionName", lit(defIndent, e.hookName(t, t.action))))
	}
	if channels := alertChannelsField(s); channels != nil {
		pairs = append(pairs, channels)
	}
	if flow := e.flowDef(t); flow != nil {
		pairs = append(pairs, kv("Flow", flow))
	}
	return fields(pairs...)
}

func (e *emitter) hookName(t *task, h *hook) string {
	if !h.method {
		return h.fn.Name()
	}
	if h.ptr {
		return "(*" + t.recv.obj.Name() + ")." + h.fn.Name()
	}
	return t.recv.obj.Name() + "." + h.fn.Name()
}

func pkgName(p *types.Package) string { return p.Name() }

// clip keeps a stored description within its 2000-byte column.
func clip(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	s = s[:max-3]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0x80 {
		s = s[:len(s)-1]
	}
	return s + "..."
}

func (e *emitter) parameterTypes(t *task) string {
	var out []string
	for i, p := range t.params {
		if t.variadic && i == len(t.params)-1 {
			out = append(out, "..."+types.TypeString(p.typ.(*types.Slice).Elem(), pkgName))
			continue
		}
		out = append(out, types.TypeString(p.typ, pkgName))
	}
	return strings.Join(out, ",")
}

// policy renders a RetryPolicy literal.
func (e *emitter) policy(p argotype.RetryPolicy) jen.Code {
	var attempts jen.Code = jen.Lit(p.MaxAttempts)
	if p.MaxAttempts == argotype.Unlimited {
		attempts = e.rt("Unlimited")
	}
	backoff := map[argotype.BackoffKind]string{
		argotype.BackoffFixed: "BackoffFixed", argotype.BackoffLinear: "BackoffLinear", argotype.BackoffExponential: "BackoffExponential",
	}[p.Backoff]
	pairs := []jen.Code{
		kv("MaxAttempts", attempts),
		kv("Backoff", e.rt(backoff)),
		kv("Initial", duration(p.Initial)),
	}
	if p.Backoff == argotype.BackoffExponential {
		pairs = append(pairs, kv("Multiplier", number(p.Multiplier)))
	}
	pairs = append(pairs, kv("MaxDelay", duration(p.MaxDelay)), kv("Jitter", e.jitter(p.Jitter)))
	if p.Timeout > 0 {
		pairs = append(pairs, kv("Timeout", duration(p.Timeout)))
	}
	return fields(pairs...)
}

func (e *emitter) jitter(j argotype.Jitter) jen.Code {
	kinds := map[argotype.JitterKind]string{
		argotype.JitterNone: "JitterNone", argotype.JitterFull: "JitterFull", argotype.JitterEqual: "JitterEqual",
		argotype.JitterRatio: "JitterRatio", argotype.JitterAdditive: "JitterAdditive",
	}
	kind := kinds[j.Kind]
	if kind == "" {
		kind = "JitterNone"
	}
	vals := []jen.Code{kv("Kind", e.rt(kind))}
	switch j.Kind {
	case argotype.JitterRatio:
		vals = append(vals, kv("Ratio", number(j.Ratio)))
	case argotype.JitterAdditive:
		vals = append(vals, kv("Max", duration(j.Max)))
	}
	return e.rt("Jitter").Values(vals...)
}

// duration renders d as n * time.Unit with the largest exact unit.
func duration(d time.Duration) jen.Code {
	if d == 0 {
		return jen.Lit(0)
	}
	units := []struct {
		d    time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}, {time.Nanosecond, "Nanosecond"}}
	for _, u := range units {
		if d%u.d == 0 {
			if d == u.d {
				return jen.Qual("time", u.name)
			}
			return jen.Op(strconv.FormatInt(int64(d/u.d), 10)).Op("*").Qual("time", u.name)
		}
	}
	panic("unreachable")
}

// number renders a float without a needless fraction.
func number(f float64) jen.Code {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return jen.Op(strconv.FormatInt(int64(f), 10))
	}
	return jen.Op(strconv.FormatFloat(f, 'g', -1, 64))
}

// defIndent is where a TaskDef field's value starts: one tab in, after a
// key aligned to "ParameterTypes: ".
const defIndent = tabWidth + len("ParameterTypes: ")

// signatureCheck renders var _ func(…) error = ref, which breaks the build
// when fn's signature changes; its parameters one a line when they do not
// fit on one.
func (e *emitter) signatureCheck(fn *types.Func, recv, ref jen.Code) jen.Code {
	return e.fit(0, func(multi bool) jen.Code {
		return jen.Var().Id("_").Add(e.funcType(fn.Signature(), recv, multi)).Op("=").Add(ref)
	})
}

// registerCall renders if err := rt.Register(defs…); err != nil { return
// err }, one definition a line when they do not fit on one.
func (e *emitter) registerCall(defs []jen.Code) jen.Code {
	return e.fit(tabWidth, func(multi bool) jen.Code {
		return jen.If(jen.Err().Op(":=").Id("rt").Dot("Register").Add(list("(", ")", multi, defs...)), jen.Err().Op("!=").Nil()).
			Block(jen.Return(jen.Err()))
	})
}
