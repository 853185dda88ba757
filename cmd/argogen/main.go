// Command argogen writes durable wrappers for the //argo:retry functions and
// methods of a Go package (see package github.com/argo-retry/argo/gen for the
// directive and the generated API).
//
// Usage:
//
//	argogen [-output argo_gen.go] [-tags a,b] [-check] [dir | pattern ...]
//	argogen init [-output argo_tasks.go] [-package name] [dir]
//
// With no dir it works in the current directory, which is where
// `//go:generate go tool argogen` runs it. An argument containing "..." is a package
// pattern as the go command reads it (argogen -check ./... in CI): every
// matched package with an argo directive, a near-miss of one, or a generated
// file is processed; the others need nothing. Exit status: 0 done, 1 user
// errors or (with -check) a missing or stale generated file (each printed on
// stderr, errors as file:line:col: message; nothing is written), 2 bad
// usage. Warnings (file:line:col: warning: message, for comments that look
// like a misspelt //argo:retry) do not change the exit status.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/argo-retry/argo/gen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: argogen [flags] [dir | pattern ...]
       argogen init [flags] [dir]

argogen reads the //argo:retry directives of the Go package in each dir
(default: the current directory, as go generate runs it) and writes one
generated file per package with the durable wrappers FDurable and
FDurableTx and the ArgoRegister functions. Nothing is written when any
directive or signature is wrong: every error is printed as
file:line:col: message, and the exit status is 1. An argument with "..."
is a package pattern, as for go build (argogen -check ./...). Comments
that look like a misspelt //argo:retry get a warning (file:line:col:
warning: ...) that does not change the exit status.

argogen init writes a commented starter file with a //go:generate line and
one annotated function into the package in dir.

flags:
`

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "init" {
		return runInit(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("argogen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", gen.DefaultOutput, "name of the generated file in each package directory")
	tags := fs.String("tags", "", "comma-separated build tags used to load the package")
	check := fs.Bool("check", false, "write nothing; exit 1 if a generated file is missing or out of date")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, d := range dirs {
		if strings.HasPrefix(d, "-") {
			fmt.Fprintf(stderr, "argogen: flag %s after a directory: flags come first\n", d)
			return 2
		}
	}
	var tagList []string
	if *tags != "" {
		tagList = strings.Split(*tags, ",")
	}
	cwd, _ := os.Getwd()
	dirs, err := expand(dirs, tagList, *output)
	if err != nil {
		fmt.Fprintln(stderr, "argogen:", err)
		return 1
	}
	status := 0
	for _, dir := range dirs {
		res, err := gen.Generate(gen.Options{Dir: dir, Output: *output, Tags: tagList})
		if err == nil {
			if len(res.Warnings) > 0 {
				fmt.Fprintln(stderr, res.Warnings.Format(cwd))
			}
			if *check {
				err = staleness(cwd, res)
			} else {
				err = res.Write()
			}
		}
		if err != nil {
			printErr(stderr, cwd, err)
			status = 1
		}
	}
	return status
}

// expand replaces each argument containing "..." by the directories of the
// packages it matches that have something for argogen (see gen.Match);
// other arguments are directories and stay as they are.
func expand(args, tags []string, output string) ([]string, error) {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		abs, err := filepath.Abs(d)
		if err != nil {
			abs = d
		}
		if !seen[abs] {
			seen[abs] = true
			dirs = append(dirs, d)
		}
	}
	for _, a := range args {
		if !strings.Contains(a, "...") {
			add(a)
			continue
		}
		matched, err := gen.Match([]string{a}, tags, output)
		if err != nil {
			return nil, err
		}
		for _, d := range matched {
			add(d)
		}
	}
	return dirs, nil
}

// staleness says why the output file on disk is not what argogen would
// write, or returns nil when it is.
func staleness(cwd string, res *gen.Result) error {
	if !res.Stale() {
		return nil
	}
	path := rel(cwd, res.Path)
	if _, err := os.Stat(res.Path); err != nil {
		return fmt.Errorf("%s is missing: run go generate", path)
	}
	if res.Source == nil {
		return fmt.Errorf("%s is left over (the package has no //argo:retry directive): run go generate, which removes it", path)
	}
	return fmt.Errorf("%s is out of date: run go generate", path)
}

// parse parses flags; done reports that run must return code now (-h or
// bad flags).
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, true
	}
	if err != nil {
		return 2, true
	}
	return 0, false
}

func printErr(w io.Writer, cwd string, err error) {
	var list gen.ErrorList
	if errors.As(err, &list) {
		fmt.Fprintln(w, list.Format(cwd))
		return
	}
	fmt.Fprintln(w, "argogen:", err)
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}
