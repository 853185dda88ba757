package storage

// UniqueKeyBytesProbe fails on a MySQL or MariaDB schema whose
// argo_task.unique_key is not yet VARBINARY (migration 000004): the
// collation binary is valid only for binary strings there (error 1253 for
// a utf8mb4 column, raised before any row), and it is SQLite's own default
// collation, where 000004 changes nothing. The name is quoted with
// backquotes, which both read, because BINARY is a MySQL keyword.
const UniqueKeyBytesProbe = "SELECT unique_key COLLATE `binary` FROM argo_task WHERE 1=0"
