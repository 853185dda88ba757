package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
)

// directiveText is the directive as written, without its "//".
const directiveText = directiveTool + ":" + directiveName

// nearMiss returns what is wrong with a comment that is not an //argo:retry
// directive but was probably meant as one, and what to write instead; ""
// when the comment does not look like a directive. Comments that are
// directives of the argo tool (//argo:NAME) are not near-misses: the checker
// reports them.
//
// It catches a space after // ("// argo:retry"), a block comment, a case
// variant ("//argo:Retry", "//ARGO:retry") and a misspelling at edit
// distance 1 or 2 ("//argo:retries", "//agro:retry").
func nearMiss(text string) string {
	if body, ok := strings.CutPrefix(text, "/*"); ok {
		if first := firstWord(strings.TrimSuffix(body, "*/")); closeToDirective(first) {
			return fmt.Sprintf("/* %s */ is a block comment, not a directive (argogen ignores it): write //%s on its own line, directly above func", first, directiveText)
		}
		return ""
	}
	body, ok := strings.CutPrefix(text, "//")
	if !ok {
		return ""
	}
	if d, ok := ast.ParseDirective(token.NoPos, text); ok && d.Tool == directiveTool {
		return "" // //argo:NAME: the checker reports it
	}
	first := firstWord(body)
	if !closeToDirective(first) {
		return ""
	}
	switch {
	case body != "" && (body[0] == ' ' || body[0] == '\t'):
		return fmt.Sprintf("// %s is an ordinary comment, not a directive (argogen ignores it): write //%s with no space after //", first, directiveText)
	case !strings.HasPrefix(body, first):
		// "//argo: retry": a space inside.
		return fmt.Sprintf("//%s is not a directive (argogen ignores it): write //%s, with no space inside", strings.TrimSpace(body), directiveText)
	case strings.EqualFold(first, directiveText):
		return fmt.Sprintf("//%s is not a directive (directives are lower case; argogen ignores it): write //%s", first, directiveText)
	}
	return fmt.Sprintf("//%s is not a directive argogen knows (argogen ignores it): did you mean //%s?", first, directiveText)
}

// firstWord returns s's first word; a space after a colon is dropped
// ("argo: retry" gives "argo:retry") so that it reads as the directive.
func firstWord(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return ""
	}
	if strings.HasSuffix(fields[0], ":") && len(fields) > 1 {
		return fields[0] + fields[1]
	}
	return fields[0]
}

// closeToDirective reports whether word is "argo:retry" up to case and at
// most two edits (arguments after '=' are ignored). The word must be
// letters, a colon and letters: prose quoting the directive ("// //argo:retry
// reads ...", "// argo:retry, the directive") is not a near-miss.
func closeToDirective(word string) bool {
	word, _, _ = strings.Cut(strings.ToLower(word), "=")
	tool, name, ok := strings.Cut(word, ":")
	if !ok || !lettersOnly(tool) || !lettersOnly(name) {
		return false
	}
	return editDistance(word, directiveText) <= 2
}

// misplaced explains why the //argo:retry comment cm, which is not in the
// doc comment of a function declaration, generates nothing, and what to do
// instead. cg is cm's comment group.
func misplaced(f *ast.File, fset *token.FileSet, cg *ast.CommentGroup) string {
	line := func(p token.Pos) int { return fset.Position(p).Line }
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		if gd.Doc == cg && len(gd.Specs) > 0 {
			return onSpec(gd.Tok, gd.Specs[0])
		}
		for _, s := range gd.Specs {
			if specDoc(s) == cg {
				return onSpec(gd.Tok, s)
			}
		}
	}
	// A directive inside a function body, on the line above a func literal.
	var lit *ast.FuncLit
	ast.Inspect(f, func(n ast.Node) bool {
		if fl, ok := n.(*ast.FuncLit); ok && lit == nil && line(fl.Pos()) == line(cg.End())+1 {
			lit = fl
		}
		return lit == nil
	})
	if lit != nil {
		return fmt.Sprintf("//%s is on a func literal: only declared functions and methods can be tasks; move its body into a named function or method and put the directive directly above that func", directiveText)
	}
	// A directive followed by a blank line, then a function.
	for _, d := range f.Decls {
		if d.Pos() <= cg.End() {
			continue
		}
		if fd, ok := d.(*ast.FuncDecl); ok {
			start := fd.Pos()
			if fd.Doc != nil {
				start = fd.Doc.Pos()
			}
			if line(start) > line(cg.End())+1 {
				return fmt.Sprintf("//%s is separated from func %s by a blank line, so it is not in its doc comment: remove the blank line", directiveText, fd.Name.Name)
			}
		}
		break
	}
	return fmt.Sprintf("//%s must be in the doc comment of a function or method (directly above func, no blank line)", directiveText)
}

func specDoc(s ast.Spec) *ast.CommentGroup {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return s.Doc
	case *ast.ValueSpec:
		return s.Doc
	}
	return nil
}

// onSpec explains a directive on a type, variable or constant declaration.
func onSpec(tok token.Token, s ast.Spec) string {
	switch s := s.(type) {
	case *ast.TypeSpec:
		return fmt.Sprintf("//%s is on the type %s: only functions and methods can be tasks; put it directly above a method of %s or a function", directiveText, s.Name.Name, s.Name.Name)
	case *ast.ValueSpec:
		if tok == token.CONST {
			return fmt.Sprintf("//%s is on the constant %s: only functions and methods can be tasks; put it directly above a func", directiveText, s.Names[0].Name)
		}
		return fmt.Sprintf("//%s is on the variable %s: only declared functions and methods can be tasks (not a func value); declare func %s(ctx context.Context, …) error and put the directive directly above it", directiveText, s.Names[0].Name, s.Names[0].Name)
	}
	return fmt.Sprintf("//%s must be in the doc comment of a function or method", directiveText)
}

// lettersOnly reports whether s is a non-empty run of ASCII lower-case letters.
func lettersOnly(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return s != ""
}
