package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Env is what the figures were measured on.
type Env struct {
	CPUs        int               `json:"cpus"`
	CPUModel    string            `json:"cpu_model"`
	MemTotal    string            `json:"mem_total"`
	GoVersion   string            `json:"go_version"`
	Revision    string            `json:"revision,omitempty"` // VCS revision the bench was built from (+dirty if modified)
	Label       string            `json:"label,omitempty"`
	OS          string            `json:"os"`
	LoadStart   string            `json:"loadavg_start"`
	LoadEnd     string            `json:"loadavg_end,omitempty"`
	Dialect     string            `json:"dialect"`
	DSN         string            `json:"dsn"`
	Server      string            `json:"server_version"`
	Durability  map[string]string `json:"durability"`
	Scale       float64           `json:"scale"`
	Runs        int               `json:"runs"`
	Workers     int               `json:"workers"`
	Submitters  int               `json:"submitters"`
	HandBatch   int               `json:"hand_claim_batch"`
	StartedAt   string            `json:"started_at"`
	DurationSec float64           `json:"duration_sec,omitempty"`
}

func machineEnv() Env {
	e := Env{CPUs: goruntime.NumCPU(), GoVersion: goruntime.Version(), OS: goruntime.GOOS + "/" + goruntime.GOARCH, Durability: map[string]string{}}
	e.CPUModel = firstField("/proc/cpuinfo", "model name")
	if m := firstField("/proc/meminfo", "MemTotal"); m != "" {
		if kb, err := strconv.ParseFloat(strings.Fields(m)[0], 64); err == nil {
			e.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	e.LoadStart = loadAvg()
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, mod string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				mod = kv.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && mod == "true" {
			rev += "+dirty"
		}
		e.Revision = rev
	}
	return e
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// firstField returns the value of the first "key : value" line of a /proc file.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// dbEnv reads the server version and its durability settings.
func dbEnv(ctx context.Context, db *sql.DB, dialect string, e *Env) error {
	if dialect == "sqlite" {
		if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&e.Server); err != nil {
			return err
		}
		e.Server = "SQLite " + e.Server + " (modernc.org/sqlite, in process)"
		// Read through one connection, which OpenDB configured like argo's.
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		for _, p := range []string{"journal_mode", "synchronous", "busy_timeout", "cache_size", "page_size"} {
			var v string
			if err := conn.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil {
				return err
			}
			if p == "synchronous" {
				v += map[string]string{"0": " (OFF)", "1": " (NORMAL)", "2": " (FULL)", "3": " (EXTRA)"}[v]
			}
			e.Durability[p] = v
		}
		return nil
	}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&e.Server); err != nil {
		return err
	}
	rows, err := db.QueryContext(ctx, "SHOW VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit', 'sync_binlog', 'log_bin', 'innodb_doublewrite', 'innodb_flush_method', 'innodb_buffer_pool_size', 'tx_isolation', 'transaction_isolation', 'innodb_log_file_size', 'version_comment')")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		e.Durability[k] = v
	}
	return rows.Err()
}
