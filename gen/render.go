package gen

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// recvType renders T or *T for r, or nil for a plain function.
func (e *emitter) recvType(r *recvType, ptr bool) jen.Code {
	if r == nil {
		return nil
	}
	t := e.qual(r.obj.Pkg(), r.obj.Name())
	if ptr {
		return jen.Op("*").Add(t)
	}
	return t
}

// funcType renders sig as a func type; with recv, as the type of a method
// expression (the receiver first); multi puts each parameter on a line.
func (e *emitter) funcType(sig *types.Signature, recv jen.Code, multi bool) jen.Code {
	var params []jen.Code
	if recv != nil {
		params = append(params, recv)
	}
	ps := sig.Params()
	for i := range ps.Len() {
		params = append(params, e.paramType(ps.At(i).Type(), sig.Variadic() && i == ps.Len()-1))
	}
	return jen.Func().Add(list("(", ")", multi, params...)).Error()
}

func (e *emitter) paramType(t types.Type, variadic bool) jen.Code {
	if variadic {
		return jen.Op("...").Add(e.typ(t.(*types.Slice).Elem()))
	}
	return e.typ(t)
}

// funcRef renders F, (*T).M or T.M.
func (e *emitter) funcRef(fn *types.Func, recv *recvType, ptr bool) jen.Code {
	if fn.Signature().Recv() == nil || recv == nil {
		return jen.Id(fn.Name())
	}
	t := e.qual(recv.obj.Pkg(), recv.obj.Name())
	if ptr {
		return jen.Parens(jen.Op("*").Add(t)).Dot(fn.Name())
	}
	return t.Dot(fn.Name())
}

// typ renders a (checked, storable) parameter type.
func (e *emitter) typ(t types.Type) jen.Code {
	switch u := t.(type) {
	case *types.Alias:
		if o := u.Obj(); o.Pkg() != nil && (o.Exported() || o.Pkg() == e.pkg) && u.TypeArgs().Len() == 0 {
			return e.qual(o.Pkg(), o.Name())
		}
		return e.typ(types.Unalias(u))
	case *types.Named:
		s := e.qual(u.Obj().Pkg(), u.Obj().Name())
		if args := u.TypeArgs(); args.Len() > 0 {
			var list []jen.Code
			for a := range args.Types() {
				list = append(list, e.typ(a))
			}
			s.Types(list...)
		}
		return s
	case *types.Basic:
		return jen.Id(u.Name())
	case *types.Pointer:
		return jen.Op("*").Add(e.typ(u.Elem()))
	case *types.Slice:
		return jen.Index().Add(e.typ(u.Elem()))
	case *types.Array:
		return jen.Index(jen.Op(strconv.FormatInt(u.Len(), 10))).Add(e.typ(u.Elem()))
	case *types.Map:
		return jen.Map(e.typ(u.Key())).Add(e.typ(u.Elem()))
	case *types.Struct:
		return jen.StructFunc(func(g *jen.Group) {
			for i := range u.NumFields() {
				fv := u.Field(i)
				var s *jen.Statement
				if fv.Embedded() {
					s = jen.Add(e.typ(fv.Type()))
				} else {
					s = jen.Id(fv.Name()).Add(e.typ(fv.Type()))
				}
				if tag := u.Tag(i); tag != "" {
					if strings.Contains(tag, "`") {
						s.Op(strconv.Quote(tag))
					} else {
						s.Op("`" + tag + "`")
					}
				}
				g.Add(s)
			}
		})
	case *types.Signature:
		// Only in guards of hooks: never a stored parameter.
		return e.funcType(u, nil, false)
	case *types.Interface:
		if u.Empty() {
			return jen.Any()
		}
	}
	panic(fmt.Sprintf("argogen: cannot render type %s (%T)", t, t))
}
