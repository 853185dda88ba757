// Package sql holds argo's schema as plain migration files, one folder per
// database (mysql/, sqlite/), named for golang-migrate
// (NNNNNN_name.up.sql / .down.sql). DBAs apply the files; the runtime and
// argoctl embed the same files through FS to apply or check them.
package sql

import "embed"

// FS holds mysql/*.sql and sqlite/*.sql.
//
//go:embed mysql/*.sql sqlite/*.sql
var FS embed.FS
