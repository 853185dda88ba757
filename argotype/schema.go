package argotype

import "fmt"

// SchemaError says the argo tables are missing or out of date, and what to
// apply.
type SchemaError struct {
	Dialect   string // the database's dialect: "mysql" or "sqlite"
	Migration string // the first file of sql/<Dialect>/ not applied, e.g. "000002_attempt_on_task.up.sql"
	Err       error  // the database's error that showed it missing
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("argo: the argo tables are missing or out of date in this database (%v): apply sql/%s/%s and the files after it (DBAs), run `argoctl migrate -dsn ...`, or set Config.AutoMigrate", e.Err, e.Dialect, e.Migration)
}

// Unwrap returns the database's error.
func (e *SchemaError) Unwrap() error { return e.Err }

// MigrationStep is one file a migration recorded in argo_schema_migrations.
type MigrationStep struct {
	File string // e.g. "mysql/000002_attempt_on_task.up.sql"
	// AlreadyPresent: every table and column the file creates was there
	// before this call, without a record: the file was applied by hand (or,
	// as SQLite's 000004, adds nothing to the files before it). Its
	// statements, all idempotent, ran again, and it is now recorded.
	AlreadyPresent bool
}
