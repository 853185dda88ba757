// Package failover is a database/sql connector over several MySQL-family
// servers (plain MySQL or MariaDB, or the nodes of a Galera cluster) that
// sends every new connection to one server that is up and writable, fails
// over to another when that one stops being usable, and comes back to a
// server that returns, without a restart.
//
// A server is usable when a connection to it succeeds and it reports
// @@read_only = 0; a Galera node (wsrep_on = ON) must also report
// wsrep_ready = ON, wsrep_cluster_status = Primary and wsrep_local_state 4
// (Synced): a donor, a joiner, a desynced node or a node of a non-primary
// component is not used.
//
// # Which server
//
// The servers are preferred in the order the DSN lists them, and the
// current server is kept while it stays usable: a new connection goes to the
// current server, or, when it is unusable, to the first usable server in DSN
// order. A server listed before the current one that has stayed usable for
// Options.FailbackAfter (DefaultFailbackAfter) becomes current again. Every
// process given the same list therefore converges on the same server — the
// first listed one that is up — which on Galera avoids the certification
// conflicts of writing one table through several nodes; a process that
// failed over alone (a network blip of its own) comes back to its
// companions rather than staying apart. A random or round-robin choice would
// spread the processes over the nodes; a purely sticky one would leave them
// wherever each last failed over. To write through every node instead, give
// each process the list in its own order.
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
