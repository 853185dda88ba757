package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/argo-retry/argo/gen"
	"github.com/argo-retry/argo/templates"
)

// runInit writes the starter file of `argogen init`.
func runInit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("argogen init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", "argo_tasks.go", "name of the starter file")
	pkg := fs.String("package", "", "package name (default: the package clause of the Go files in dir, else dir's name)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: argogen init [flags] [dir]\n\nargogen init writes a commented starter file with a //go:generate line and one\n//argo:retry function into the package in dir (default: the current directory).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	if err := writeInit(dir, *output, *pkg); err != nil {
		fmt.Fprintln(stderr, "argogen init:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: edit it, then run go generate\n", filepath.Join(dir, *output))
	return 0
}

func writeInit(dir, output, pkg string) error {
	if filepath.Base(output) != output || !strings.HasSuffix(output, ".go") || output == gen.DefaultOutput {
		return fmt.Errorf("-output %q: want a .go file name other than %s", output, gen.DefaultOutput)
	}
	path := filepath.Join(dir, output)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s already exists; remove it or choose another -output", path)
	}
	if pkg == "" {
		var err error
		if pkg, err = packageOf(dir); err != nil {
			return err
		}
	}
	var b bytes.Buffer
	if err := templates.Init(&b, templates.InitData{Package: pkg, Output: gen.DefaultOutput}); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// packageOf reads the package name of the Go files in dir, or derives one
// from dir's name.
func packageOf(dir string) (string, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly); err == nil {
			return f.Name.Name, nil
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	name := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			return unicode.ToLower(r)
		}
		return -1
	}, filepath.Base(abs))
	if !token.IsIdentifier(name) {
		return "", errors.New("cannot derive a package name from the directory name: use -package")
	}
	return name, nil
}
