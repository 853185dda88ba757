// Package failover is a database/sql connector over several MySQL-family
// servers (plain MySQL or MariaDB, or the nodes of a Galera cluster) that
// sends every new connection to one server that is up and writable, chosen
// so that every process given the same servers writes through the same one,
// and moves when that one stops being usable, without a restart.
//
// A server is usable when a connection to it succeeds and it reports
// read_only, super_read_only (MySQL) and innodb_read_only (a server started
// read-only, as an Aurora reader) all OFF; a Galera node (wsrep_on = ON)
// must also report wsrep_ready = ON, wsrep_cluster_status = Primary and
// wsrep_local_state 4 (Synced): a donor, a joiner, a desynced node or a
// node of a non-primary component is not used.
//
// # Which server
//
// The first connection waits for one round of health checks of every
// server, so that the choice is made from what each reports.
//
// Galera: the writer is elected from what the nodes report: the usable node
// with the lowest wsrep_gcomm_uuid (Galera orders a view's members by it:
// the lowest wsrep_local_index among the usable nodes). Every process
// elects alike whatever order its DSN lists the nodes in, so all write
// through one node and Galera's certification is never relied on to catch
// conflicting writes of two nodes; all move within a round of checks when
// that node dies, leaves the primary component or stops being Synced, or
// when a node ranked before it is Synced again. For two rounds of checks
// after the writer changes (or is first chosen), connections read with
// wsrep_sync_wait 7 (ORed into the server's own value), so that a read that
// decides a write waits for the writes the old writer had certified.
// Options.MultiWriter restores the former behaviour, each process writing
// through the first usable node of its own list: see its documentation for
// what that risks.
//
// Plain MySQL or MariaDB (a primary and its replicas): the current server
// is kept while it stays usable; when it is not, the first usable server in
// DSN order is used. A server writes moved off is replaced, once a
// connection to its successor has been handed out, and never used again by
// this connector — not when it comes back writable (an old primary
// restarted while a promoted replica took its writes), nor when its
// successor fails too: connections are refused then, naming it replaced.
// Keep replicas read_only=ON, so that only a promoted one is ever chosen.
//
// # Pooled connections
//
// Connections are wrapped so that database/sql drops them once they should
// no longer be used: IsValid and ResetSession report a connection bad when
// its server is not the current one or is marked unusable (besides what the
// driver itself reports: a connection that saw a network error). A server
// that answers 1047 ("WSREP has not yet prepared node for application use":
// a Galera node that left the primary component) or 1053 (server shutdown
// in progress) is marked unusable at once; one that answers 1290 or 1836
// (read-only) is checked at once. The wrapper implements every optional
// interface of the driver's connection (ExecerContext, QueryerContext,
// ConnBeginTx, ConnPrepareContext, NamedValueChecker, Pinger,
// SessionResetter, Validator) and returns the driver's own results, so code
// using sql.Conn.Raw keeps working; Unwrap returns the driver's connection.
//
// # Health checks
//
// A background goroutine, started on the first Connect and stopped by
// Close (which sql.DB.Close calls), checks every server each
// Options.CheckInterval, each check bounded by Options.CheckTimeout, and at
// once when a connection reports an error that may mean its server is gone.
// Changes are logged with the servers' addresses, never a password.
//
// A DSN names several servers in its address, separated by commas
// (ParseServerList): mysql:user:pw@tcp(10.0.0.1:3306,10.0.0.2:3306)/app.
package failover
