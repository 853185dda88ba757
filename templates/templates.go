// Package templates holds the text templates argogen renders as text rather
// than builds with jennifer: today the starter file that `argogen init`
// writes into a package. They are embedded, so the argogen binary needs no
// files beside it.
package templates

import (
	_ "embed"
	"fmt"
	"go/token"
	"io"
	"text/template"
)

//go:embed init.go.tmpl
var initText string

var initTmpl = template.Must(template.New("init.go.tmpl").Parse(initText))

// InitData fills the starter file.
type InitData struct {
	// Package is the package clause's name.
	Package string
	// Output is the name of the file argogen generates (argo_gen.go).
	Output string
}

// Init renders the starter file of `argogen init`: a //go:generate line and
// one commented, annotated function with its fallback.
func Init(w io.Writer, d InitData) error {
	if !token.IsIdentifier(d.Package) {
		return fmt.Errorf("templates: package name %q is not a Go identifier", d.Package)
	}
	if d.Output == "" {
		d.Output = "argo_gen.go"
	}
	return initTmpl.Execute(w, d)
}
