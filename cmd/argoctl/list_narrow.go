package main

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/argo-retry/argo/runtime"
)

// listWidth is the terminal width list fits without -wide.
const listWidth = 120

// maxShortName is the most runes of a short task name list shows without -wide.
const maxShortName = 36

// narrowTimeLayout is a time in list without -wide: UTC, to the second,
// without the year.
const narrowTimeLayout = "01-02 15:04:05"

// shortName is a task name without its import path: the part after the
// last '/' ("integration.Systems.PrintLabel").
func shortName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func fmtNarrowTime(m runtime.Millis) string {
	if m == 0 {
		return "-"
	}
	return m.Time().UTC().Format(narrowTimeLayout)
}

// writeNarrowList is list without -wide: short names, times to the second
// without the year, and each error cut to what is left of listWidth.
func writeNarrowList(e *env, tasks []*runtime.Task) {
	const gap = 2 // the table's padding between columns
	head := []string{"ID", "TASK", "STATE", "ATTEMPTS", "SHARD", "DUE", "MODIFIED"}
	rows := [][]string{head}
	for _, t := range tasks {
		rows = append(rows, []string{strconv.FormatInt(t.ID, 10), cell(shortName(t.Name), maxShortName), t.State.String(), attempts(t),
			strconv.Itoa(t.ShardKey), fmtNarrowTime(t.ExecuteTime), fmtNarrowTime(t.GmtModified)})
	}
	used := 0
	for col := range head {
		width := 0
		for _, r := range rows {
			width = max(width, utf8.RuneCountInString(r[col]))
		}
		used += width + gap
	}
	errWidth := max(listWidth-used, 10)
	w := newTable(e.stdout)
	for i, r := range rows {
		cells := make([]any, 0, len(r)+1)
		for _, c := range r {
			cells = append(cells, c)
		}
		if i == 0 {
			cells = append(cells, "ERROR")
		} else {
			cells = append(cells, cell(tasks[i-1].ErrorMsg, errWidth))
		}
		row(w, cells...)
	}
	w.Flush()
}
