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
	applied, err := runtime.Migrate(ctx, c.db, dialect)
	if e.json() {
		if applied == nil {
			applied = []string{}
		}
		if jerr := writeJSON(e.stdout, map[string]any{"dialect": dialect, "applied": applied}); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		for _, f := range applied {
			fmt.Fprintf(e.stdout, "applied sql/%s\n", f)
		}
		if err == nil && len(applied) == 0 {
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
