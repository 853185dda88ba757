package storage

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	argosql "github.com/argo-retry/argo/sql"
)

// Migrate applies the embedded migrations of the dialect that are not yet
// recorded in argo_schema_migrations, and returns the files it recorded
// (MigrateSteps tells those applied by hand before apart). It is idempotent
// and safe to run from several processes at once (every statement is IF NOT
// EXISTS, or an ADD COLUMN whose "already exists" error means another
// process applied it).
func Migrate(ctx context.Context, db *sql.DB, dialect string) ([]string, error) {
	steps, err := MigrateSteps(ctx, db, dialect)
	var files []string
	for _, s := range steps {
		files = append(files, s.File)
	}
	return files, err
}

// MigrateSteps is Migrate, saying for each file whether it was applied by
// hand before (see MigrationStep). The migrations of a dialect are the
// files sql/<dialect>/*.up.sql, applied in name order.
func MigrateSteps(ctx context.Context, db *sql.DB, dialect string) ([]MigrationStep, error) {
	d, err := openDriver(db, dialect, Options{})
	if err != nil {
		return nil, fmt.Errorf("argo: migrate: %w", err)
	}
	defer d.Close()
	st := d.SQL()
	refused := func(what string, err error) error {
		if gerr := d.GrantError(db, err, what); gerr != nil {
			return gerr
		}
		return fmt.Errorf("argo: migrate: %w", err)
	}
	const record = "(its record, argo_schema_migrations)"
	if _, err := db.ExecContext(ctx, st.CreateMigrationsTable); err != nil {
		return nil, refused(record, err)
	}
	files, err := fs.Glob(argosql.FS, d.Name()+"/*.up.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var applied []MigrationStep
	var present map[string]bool // probed once, before this call changes anything
	for _, f := range files {
		base := strings.TrimPrefix(f, d.Name()+"/")
		version, err := strconv.ParseInt(strings.SplitN(base, "_", 2)[0], 10, 64)
		if err != nil {
			return applied, fmt.Errorf("argo: migrate: %s: bad version prefix", f)
		}
		var n int
		if err := db.QueryRowContext(ctx, st.MigrationRecorded, version).Scan(&n); err != nil {
			return applied, refused(record, err)
		}
		if n > 0 {
			continue
		}
		if present == nil {
			present = presentMigrations(ctx, db, st.SchemaProbes)
		}
		body, err := argosql.FS.ReadFile(f)
		if err != nil {
			return applied, err
		}
		for _, stmt := range SplitStatements(string(body)) {
			if _, err := db.ExecContext(ctx, stmt); err != nil && !d.IsDuplicateColumn(err) {
				if gerr := d.GrantError(db, err, f); gerr != nil {
					return applied, gerr
				}
				return applied, fmt.Errorf("argo: migrate %s: %w\n%s", f, err, stmt)
			}
		}
		if _, err := db.ExecContext(ctx, st.RecordMigration, version, nowMillis()); err != nil && !d.IsDuplicate(err) {
			if gerr := d.GrantError(db, err, record); gerr != nil {
				return applied, gerr
			}
			return applied, fmt.Errorf("argo: migrate: record %s: %w", f, err)
		}
		applied = append(applied, MigrationStep{File: f, AlreadyPresent: present[base]})
	}
	return applied, nil
}

// presentMigrations returns the migration files whose schema probes all
// pass: their tables and columns are there.
func presentMigrations(ctx context.Context, db *sql.DB, probes []SchemaProbe) map[string]bool {
	present, missing := map[string]bool{}, map[string]bool{}
	for _, p := range probes {
		rows, err := db.QueryContext(ctx, p.Query)
		if err != nil {
			missing[p.Migration] = true
			continue
		}
		rows.Close()
		present[p.Migration] = true
	}
	for m := range missing {
		delete(present, m)
	}
	return present
}

// SplitStatements splits a migration file on semicolons at line ends,
// dropping -- comment lines. Migration files keep semicolons out of strings.
func SplitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
