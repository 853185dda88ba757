package main

import (
	"strconv"
	"strings"

	"github.com/argo-retry/argo/runtime"
)

// listWidth is the terminal width, in columns, that list fits without -wide.
const listWidth = 120

// maxShortName is the most terminal columns of a short task name list
// shows without -wide.
const maxShortName = 36

// minErrorWidth is the fewest columns list leaves its error column without
// -wide, even when the other columns leave less of listWidth.
const minErrorWidth = 10

// narrowTimeLayout is a time in list without -wide: UTC, to the second,
// without the year.
const narrowTimeLayout = "01-02 15:04:05"

// listGap is the spaces between two columns of list (writeAligned's gap).
const listGap = 2

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

var listHead = []string{"ID", "TASK", "STATE", "ATTEMPTS", "SHARD", "DUE", "MODIFIED", "ERROR"}

// minShortName is the fewest terminal columns list cuts a task name to
// without -wide when long ids leave less than minErrorWidth for errors.
const minShortName = 16

// listTaskColumn is the TASK column of listHead.
const listTaskColumn = 1

// writeNarrowList is list without -wide: short names, times to the second
// without the year, and each error cut, on a character boundary with "…",
// to the terminal columns left of listWidth (at least minErrorWidth; task
// names are cut further, to minShortName, to leave it).
func writeNarrowList(e *env, tasks []*runtime.Task) {
	rows := [][]string{listHead}
	for _, t := range tasks {
		rows = append(rows, []string{strconv.FormatInt(t.ID, 10), oneLineText(shortName(t.Name)), t.State.String(), attempts(t),
			strconv.Itoa(t.ShardKey), fmtNarrowTime(t.ExecuteTime), fmtNarrowTime(t.GmtModified), ""})
	}
	widths := make([]int, len(listHead)-1)
	others := 0
	for col := range widths {
		for _, r := range rows {
			widths[col] = max(widths[col], displayWidth(r[col]))
		}
		if col != listTaskColumn {
			others += widths[col] + listGap
		}
	}
	nameWidth := min(widths[listTaskColumn], maxShortName)
	if others+nameWidth+listGap+minErrorWidth > listWidth {
		nameWidth = max(listWidth-others-listGap-minErrorWidth, minShortName)
	}
	errWidth := max(listWidth-others-min(widths[listTaskColumn], nameWidth)-listGap, minErrorWidth)
	for i, t := range tasks {
		rows[i+1][listTaskColumn] = cutToWidth(rows[i+1][listTaskColumn], nameWidth)
		rows[i+1][len(listHead)-1] = cell(t.ErrorMsg, errWidth)
	}
	writeAligned(e.stdout, rows)
}

// writeWideList is list -wide: full task names, times to the millisecond
// with the year, and each error whole (on one line).
func writeWideList(e *env, tasks []*runtime.Task) {
	rows := [][]string{listHead}
	for _, t := range tasks {
		rows = append(rows, []string{strconv.FormatInt(t.ID, 10), oneLineText(t.Name), t.State.String(), attempts(t),
			strconv.Itoa(t.ShardKey), fmtMillis(t.ExecuteTime), fmtMillis(t.GmtModified), oneLineText(t.ErrorMsg)})
	}
	writeAligned(e.stdout, rows)
}
