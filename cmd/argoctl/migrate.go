package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/argo-retry/argo/runtime"
)

func cmdMigrate(e *env, args []string) error {
	fs := newFlagSet("migrate")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("migrate takes no arguments, got %q", pos[0])
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.g.timeout)
	defer cancel()
	e.ctx = ctx
	c, err := open(e, false)
	if err != nil {
		return err
	}
	defer c.db.Close()
	dialect := c.dialect
	steps, err := runtime.MigrateSteps(ctx, c.db, dialect)
	// A file applied by hand before (its tables and columns there, without
	// a record) is only recorded: say so rather than "applied".
	applied, present := []string{}, []string{}
	for _, s := range steps {
		if s.AlreadyPresent {
			present = append(present, s.File)
		} else {
			applied = append(applied, s.File)
		}
	}
	if e.json() {
		if jerr := writeJSON(e.stdout, map[string]any{"dialect": dialect, "applied": applied, "already_present": present}); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		for _, s := range steps {
			if s.AlreadyPresent {
				fmt.Fprintf(e.stdout, "already present sql/%s: its tables and columns were there; recorded\n", s.File)
			} else {
				fmt.Fprintf(e.stdout, "applied sql/%s\n", s.File)
			}
		}
		if err == nil && len(steps) == 0 {
			fmt.Fprintf(e.stdout, "schema up to date (%s): nothing to apply\n", dialect)
		}
	}
	return err
}

func cmdVersion(e *env, args []string) error {
	fs := newFlagSet("version")
	if _, err := parse(e, fs, args); err != nil {
		return err
	}
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if e.json() {
		return writeJSON(e.stdout, map[string]string{"version": version, "go": goruntime.Version()})
	}
	fmt.Fprintf(e.stdout, "argoctl %s (%s)\n", version, goruntime.Version())
	return nil
}
