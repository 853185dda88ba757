package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultOutput is the name of the generated file in the package directory.
const DefaultOutput = "argo_gen.go"

// Options say which package to generate for.
type Options struct {
	// Dir is the package directory. Default ".".
	Dir string
	// Output is the generated file's name in Dir. Default DefaultOutput.
	Output string
	// Tags are build tags used to load the package.
	Tags []string
}

// Result is the output of one package.
type Result struct {
	// Path is the absolute path of the output file.
	Path string
	// Source is the generated file, or nil when the package has no
	// //argo:retry directive (then Write removes a previous output).
	Source []byte
	// Tasks is the number of directives.
	Tasks int
	// Warnings are near-misses that generate nothing but that were probably
	// meant as //argo:retry directives (a space after //, wrong case, a
	// misspelling); each says what to write instead. They do not fail the
	// run. When Generate fails, they come with its ErrorList instead.
	Warnings ErrorList
}

// Generate loads the package in opts.Dir, checks its //argo:retry directives
// and renders the generated file. It writes nothing: see Result.Write. User
// errors (bad directives, unsupported signatures) come back all at once as
// an ErrorList.
func Generate(opts Options) (*Result, error) {
	if opts.Dir == "" {
		opts.Dir = "."
	}
	if opts.Output == "" {
		opts.Output = DefaultOutput
	}
	if filepath.Base(opts.Output) != opts.Output || filepath.Ext(opts.Output) != ".go" {
		return nil, fmt.Errorf("output %q: want a .go file name in the package directory, like %s", opts.Output, DefaultOutput)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a package directory", opts.Dir)
	}
	res := &Result{Path: filepath.Join(dir, opts.Output)}
	l, err := load(dir, res.Path, opts.Tags)
	if err != nil {
		return nil, err
	}
	c, err := check(l)
	if err != nil {
		return nil, err
	}
	res.Tasks = len(c.tasks)
	res.Warnings = c.warnings
	if len(c.tasks) == 0 {
		return res, nil
	}
	res.Source, err = emit(c, c.plan())
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Write writes r.Source to r.Path through a temporary file and a rename, so
// a failed run never leaves a half-written file; an unchanged file is not
// touched. With no Source it removes a previous argogen output.
func (r *Result) Write() error {
	old, err := os.ReadFile(r.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if exists && !generatedByUs(old) {
		return fmt.Errorf("%s exists and was not written by argogen; refusing to overwrite it", r.Path)
	}
	if r.Source == nil {
		if exists {
			return os.Remove(r.Path)
		}
		return nil
	}
	if exists && bytes.Equal(old, r.Source) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.Path), ".argogen-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this finds nothing
	if _, err := tmp.Write(r.Source); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), r.Path)
}

// Stale reports whether the file on disk differs from what Write would leave.
func (r *Result) Stale() bool {
	old, err := os.ReadFile(r.Path)
	if r.Source == nil {
		return err == nil && generatedByUs(old)
	}
	return err != nil || !bytes.Equal(old, r.Source)
}
