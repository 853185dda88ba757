package main

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// filterFlags are the task filters list, requeue and discard share.
type filterFlags struct {
	states, name, since, until, errText string
	tenant, code                        string
	shard                               int
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.states, "state", "", "states, comma separated: "+strings.Join(stateNames(), ","))
	fs.StringVar(&f.name, "name", "", "task name: the full name, or its end after a / or . (Systems.PrintLabel, PrintLabel);\n"+
		"an end that several names share matches all of them; a full name that exists matches only itself;\n"+
		"=NAME matches NAME exactly and nothing else")
	fs.IntVar(&f.shard, "shard", -1, "shard key")
	fs.StringVar(&f.since, "since", "", "last changed at or after: a duration ago (1h, 30m) or an RFC 3339 time")
	fs.StringVar(&f.until, "until", "", "last changed before: a duration ago or an RFC 3339 time")
	fs.StringVar(&f.errText, "error", "", "text in the last error (ignoring case in every script; % and _ are themselves)")
	fs.StringVar(&f.code, "code", "", "error code of the last failed attempt, exactly (runtime.Coded: PAY_TIMEOUT)")
	fs.StringVar(&f.tenant, "tenant", "", "tenant, exactly (tasks submitted with Call.Tenant, runtime.WithTenant or tenant-by)")
}

func stateNames() []string {
	var out []string
	for _, s := range runtime.AllStates {
		out = append(out, s.String())
	}
	return out
}

func (f *filterFlags) filter() (runtime.Filter, error) {
	var out runtime.Filter
	if f.states != "" {
		for _, name := range strings.Split(f.states, ",") {
			s, err := runtime.ParseState(strings.TrimSpace(name))
			if err != nil {
				return out, usagef("-state: %v", err)
			}
			out.States = append(out.States, s)
		}
	}
	if exact, ok := strings.CutPrefix(f.name, "="); ok {
		if exact == "" {
			return out, usagef("-name =: want a task name after the =")
		}
		out.Name = exact
	} else {
		out.NameSuffix = f.name
	}
	if f.shard >= 0 {
		shard := f.shard
		out.Shard = &shard
	}
	var err error
	if out.Since, err = parseWhen("-since", f.since); err != nil {
		return out, err
	}
	if out.Until, err = parseWhen("-until", f.until); err != nil {
		return out, err
	}
	out.ErrorContains = f.errText
	out.Tenant = f.tenant
	if f.code != "" {
		if err := runtime.CheckErrorCode(f.code); err != nil {
			return out, usagef("-code: %s", strings.TrimPrefix(err.Error(), "argo: "))
		}
		out.ErrorCode = f.code
	}
	return out, nil
}

// parseWhen reads "1h" (that long ago) or an RFC 3339 time.
func parseWhen(flagName, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("%s %s: want a positive duration", flagName, s)
		}
		return now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("%s %q: want a duration ago (1h, 30m) or an RFC 3339 time (2025-01-02T15:04:05Z)", flagName, s)
}

// parseIDs reads positional task ids.
func parseIDs(args []string) ([]int64, error) {
	var ids []int64
	for _, a := range args {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id <= 0 {
			return nil, usagef("%q is not a task id", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
