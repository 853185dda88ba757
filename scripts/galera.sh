#!/usr/bin/env bash
# scripts/galera.sh — run a private, throwaway 3-node MariaDB Galera cluster
# on 127.0.0.1 for tests.
#
# Usage:
#   scripts/galera.sh start DIR [BASE_PORT]  initialise DIR (first time only),
#                                    bootstrap node 1, join nodes 2 and 3, and
#                                    wait until wsrep_cluster_size is 3 and
#                                    every node is Synced. No-op if all three
#                                    are running.
#   scripts/galera.sh stop DIR       clean shutdown of every node (3, 2, then
#                                    1, so node 1 may bootstrap the next start).
#   scripts/galera.sh kill-node DIR N  SIGKILL node N (1-3): a crash.
#   scripts/galera.sh start-node DIR N start node N again and wait until it has
#                                    rejoined and is Synced. After a crash it
#                                    is first run with --wsrep-recover, then
#                                    started at the recovered position
#                                    (--wsrep-start-position) so that it
#                                    catches up by incremental state transfer
#                                    (IST) from the others' gcache instead of a
#                                    full copy (SST) that blocks a donor.
#   scripts/galera.sh status DIR     one line per node: pid, state, cluster
#                                    size; exit 0 only if all three are Synced.
#   scripts/galera.sh env DIR        print `export ARGO_TEST_GALERA_*=...` lines
#                                    (eval-able), see below.
#
# Ports: node N (1-3) listens on BASE+10*(N-1) for clients, +1 for Galera
# replication, +2 for IST and +3 for SST (rsync). BASE is the second
# argument of `start`, else ARGO_GALERA_BASE_PORT, else 13410: 13410-13433,
# clear of the shared MariaDB on 13306. Two clusters on one machine need
# BASE ports at least 30 apart.
#
# Everything lives in DIR: nodeN/ holds node N's my.cnf, data/, mysql.sock,
# mariadbd.pid and mariadbd.log; base_port records the ports. Only node 1 is
# initialised with mariadb-install-db; 2 and 3 receive its data by rsync SST
# when they first join.
#
# Run as root, the nodes run as the `mysql` user (rsync SST fails reading
# files owned by root), so DIR and its parents must be searchable by it.
# Otherwise they run as the calling user. Root gets a password-less account
# for 127.0.0.1; the nodes only listen on 127.0.0.1.
#
# The sql_mode is MariaDB's shipped default (strict). Settings chosen for
# speed on loopback, not durability of a single node:
#   innodb_flush_log_at_trx_commit=2  the log is written to the OS at each
#       commit, flushed to disk once a second: a SIGKILL of a node loses
#       nothing (the OS holds the writes), only a machine crash would lose up
#       to a second of one node's log, which the others still have.
#   innodb_buffer_pool_size=128M, wsrep_slave_threads=2, gcache.size=128M
#       (the gcache must hold the writes a killed node misses, for IST).
# Galera's failure detection is left at its defaults (evs.suspect_timeout
# PT5S, evs.inactive_timeout PT15S), as in production: a SIGKILLed node
# stalls the cluster's writes until it is declared gone.
#
# Environment:
#   ARGO_GALERA_BASE_PORT      first port (default 13410)
#   ARGO_GALERA_START_TIMEOUT  seconds to wait for one node (default 180)
#
# env prints:
#   ARGO_TEST_GALERA_DSNS        the 3 nodes' go-sql-driver DSNs without a
#                                database name, comma-separated, node 1 first
#   ARGO_TEST_GALERA_KILL_NODE   command; append a node number (1-3)
#   ARGO_TEST_GALERA_START_NODE  command; append a node number (1-3)
#   ARGO_TEST_GALERA_LOCK        a file for tests to flock while they take a
#                                node down (one at a time keeps a quorum)
set -euo pipefail

NODES=3
DEFAULT_BASE_PORT=13410

die() { echo "galera.sh: $*" >&2; exit 1; }

find_bin() {
	local name dir
	for name in "$@"; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
		for dir in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
			if [[ -x "$dir/$name" ]]; then
				echo "$dir/$name"
				return 0
			fi
		done
	done
	return 1
}

find_provider() {
	local p
	for p in /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so /usr/lib64/galera/libgalera_smm.so; do
		if [[ -f "$p" ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

need_bins() {
	MARIADBD=$(find_bin mariadbd mysqld) ||
		die "mariadbd not found; install it with: sudo apt-get install mariadb-server mariadb-client galera-4 rsync"
	INSTALL_DB=$(find_bin mariadb-install-db mysql_install_db) ||
		die "mariadb-install-db not found; install it with: sudo apt-get install mariadb-server"
	ADMIN=$(find_bin mariadb-admin mysqladmin) ||
		die "mariadb-admin not found; install it with: sudo apt-get install mariadb-client"
	CLIENT=$(find_bin mariadb mysql) ||
		die "mariadb client not found; install it with: sudo apt-get install mariadb-client"
	PROVIDER=$(find_provider) ||
		die "the Galera library (libgalera_smm.so) not found; install it with: sudo apt-get install galera-4"
	find_bin rsync >/dev/null || die "rsync not found (state transfers use it); install it with: sudo apt-get install rsync"
	find_bin wsrep_sst_rsync >/dev/null || die "wsrep_sst_rsync not found; install it with: sudo apt-get install mariadb-server"
}

abs() { (cd "$1" && pwd); }

alive() {
	local state
	[[ -r "/proc/$1/stat" ]] || { kill -0 "$1" 2>/dev/null; return; }
	state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ -n "$state" && "$state" != Z && "$state" != X ]]
}

wait_gone() {
	local pid=$1 deadline=$((SECONDS + $2))
	while alive "$pid"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

node_dir() { echo "$DIR/node$1"; }

client_port() { echo $((BASE + 10 * ($1 - 1))); }
galera_port() { echo $((BASE + 10 * ($1 - 1) + 1)); }
ist_port() { echo $((BASE + 10 * ($1 - 1) + 2)); }
sst_port() { echo $((BASE + 10 * ($1 - 1) + 3)); }

node_pid() {
	local pidfile pid
	pidfile="$(node_dir "$1")/mariadbd.pid"
	[[ -s "$pidfile" ]] || return 1
	pid=$(<"$pidfile")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	alive "$pid" || return 1
	echo "$pid"
}

# sql N QUERY — run a query on node N over TCP as root, the way tests connect.
sql() {
	"$CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$(client_port "$1")" -uroot \
		--connect-timeout=2 -N -B -e "$2" </dev/null
}

# wsrep N VARIABLE — value of a wsrep status variable on node N.
wsrep() {
	sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

log_tail() {
	local log
	log="$(node_dir "$1")/mariadbd.log"
	echo "---- last lines of $log ----" >&2
	tail -n 40 "$log" >&2 2>/dev/null || echo "(no log)" >&2
	echo "----" >&2
}

is_root() { [[ $(id -u) -eq 0 ]]; }

# load_dir DIR [BASE] — set DIR and BASE (from the argument, DIR/base_port,
# ARGO_GALERA_BASE_PORT or the default, in that order).
load_dir() {
	DIR=$(abs "$1")
	if [[ -n "${2:-}" ]]; then
		BASE=$2
	elif [[ -s "$DIR/base_port" ]]; then
		BASE=$(<"$DIR/base_port")
	else
		BASE=${ARGO_GALERA_BASE_PORT:-$DEFAULT_BASE_PORT}
	fi
	[[ "$BASE" =~ ^[0-9]+$ ]] && ((BASE > 1024 && BASE + 10 * NODES < 65536)) ||
		die "bad base port '$BASE'"
}

# gcomm — the cluster address: every node's replication port.
gcomm() {
	local n addrs=()
	for n in $(seq 1 "$NODES"); do
		addrs+=("127.0.0.1:$(galera_port "$n")")
	done
	local IFS=,
	echo "gcomm://${addrs[*]}"
}

write_config() {
	local n=$1 d
	d=$(node_dir "$n")
	{
		echo "[mariadbd]"
		if is_root; then echo "user=mysql"; fi
		echo "datadir=$d/data"
		# Its own tmpdir: at start mariadbd deletes every "#sql*" file in it,
		# other servers' live temporary tables too if it were the shared /tmp.
		echo "tmpdir=$d/tmp"
		echo "socket=$d/mysql.sock"
		echo "pid-file=$d/mariadbd.pid"
		echo "log-error=$d/mariadbd.log"
		echo "bind-address=127.0.0.1"
		echo "port=$(client_port "$n")"
		echo "skip-name-resolve"
		echo "max-connections=500"
		echo "max-allowed-packet=64M"
		echo "character-set-server=utf8mb4"
		echo "collation-server=utf8mb4_general_ci"
		echo "innodb-buffer-pool-size=128M"
		echo "innodb-flush-log-at-trx-commit=2"
		# Required by Galera: row events, InnoDB, interleaved auto-increment locks.
		echo "binlog-format=ROW"
		echo "default-storage-engine=InnoDB"
		echo "innodb-autoinc-lock-mode=2"
		echo "wsrep-on=ON"
		echo "wsrep-provider=$PROVIDER"
		echo "wsrep-cluster-name=argo-test-$BASE"
		echo "wsrep-cluster-address=$(gcomm)"
		echo "wsrep-node-name=node$n"
		echo "wsrep-node-address=127.0.0.1:$(galera_port "$n")"
		echo "wsrep-node-incoming-address=127.0.0.1:$(client_port "$n")"
		echo "wsrep-sst-method=rsync"
		echo "wsrep-sst-receive-address=127.0.0.1:$(sst_port "$n")"
		echo "wsrep-slave-threads=2"
		echo "wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:$(galera_port "$n");ist.recv_addr=127.0.0.1:$(ist_port "$n");gcache.size=128M"
	} >"$d/my.cnf"
}

# own PATH... — hand PATH to the mysql user when we are root.
own() {
	if is_root; then chown -R mysql:mysql "$@"; fi
}

# check_reachable — the mysql user must be able to reach DIR.
check_reachable() {
	is_root || return 0
	getent passwd mysql >/dev/null || die "no mysql user: install mariadb-server (it creates one)"
	if ! runuser -u mysql -- test -x "$DIR" 2>/dev/null; then
		die "the mysql user cannot reach $DIR (a parent directory is not searchable by others); use a directory under /tmp"
	fi
}

init_cluster() {
	mkdir -p "$DIR"
	chmod 0755 "$DIR"
	check_reachable
	echo "$BASE" >"$DIR/base_port"
	local n d
	for n in $(seq 1 "$NODES"); do
		d=$(node_dir "$n")
		mkdir -p "$d/data" "$d/tmp"
		write_config "$n"
	done
	d=$(node_dir 1)
	own "$DIR"
	if [[ ! -d "$d/data/mysql" ]]; then
		if ! "$INSTALL_DB" --defaults-file="$d/my.cnf" \
			--auth-root-authentication-method=normal \
			--skip-test-db \
			>"$d/install.log" 2>&1 </dev/null; then
			echo "galera.sh: mariadb-install-db failed; its output:" >&2
			cat "$d/install.log" >&2
			exit 1
		fi
		own "$d"
	fi
}

# launch N [ARGS...] — start node N's mariadbd detached (own session, no
# inherited stdio), with extra server options.
launch() {
	local n=$1 d
	shift
	d=$(node_dir "$n")
	rm -f "$d/mariadbd.pid"
	local setsid=()
	if command -v setsid >/dev/null 2>&1; then
		setsid=(setsid)
	fi
	# wsrep_sst_rsync is looked up in PATH, which may lack /usr/bin's
	# neighbours for non-login shells.
	PATH="$PATH:/usr/sbin:/usr/bin:/sbin:/bin" "${setsid[@]}" "$MARIADBD" --defaults-file="$d/my.cnf" "$@" \
		</dev/null >>"$d/mariadbd.log" 2>&1 &
	LAUNCHED=$!
}

# wait_synced N SIZE — wait until node N is Synced, ready, and sees a
# cluster of SIZE nodes.
wait_synced() {
	local n=$1 size=$2 timeout=${ARGO_GALERA_START_TIMEOUT:-180}
	local deadline=$((SECONDS + timeout)) state="" got=""
	while :; do
		state=$(wsrep "$n" wsrep_local_state_comment || true)
		got=$(wsrep "$n" wsrep_cluster_size || true)
		if [[ "$state" == Synced && "$got" == "$size" && "$(wsrep "$n" wsrep_ready || true)" == ON ]]; then
			return 0
		fi
		if ! node_pid "$n" >/dev/null && ! alive "${LAUNCHED:-0}"; then
			echo "galera.sh: node $n exited during startup (state '${state}')" >&2
			log_tail "$n"
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "galera.sh: node $n not Synced in a cluster of $size after ${timeout}s (state '${state:-no answer}', cluster size '${got:-?}')" >&2
			log_tail "$n"
			exit 1
		fi
		sleep 0.2
	done
}

running_nodes() {
	local n count=0
	for n in $(seq 1 "$NODES"); do
		if node_pid "$n" >/dev/null; then count=$((count + 1)); fi
	done
	echo "$count"
}

# bootstrap_node — the node to start the cluster from: the one Galera marked
# safe_to_bootstrap at the last clean shutdown (node 1 on a fresh cluster).
bootstrap_node() {
	local n f
	for n in $(seq 1 "$NODES"); do
		f="$(node_dir "$n")/data/grastate.dat"
		[[ -f "$f" ]] || continue
		if grep -q '^safe_to_bootstrap: *1' "$f"; then
			echo "$n"
			return 0
		fi
	done
	if [[ ! -f "$(node_dir 1)/data/grastate.dat" ]]; then
		echo 1
		return 0
	fi
	return 1
}

cmd_start() {
	[[ $# -ge 1 && $# -le 2 ]] || die "usage: galera.sh start DIR [BASE_PORT]"
	need_bins
	mkdir -p "$1"
	load_dir "$@"
	local running
	running=$(running_nodes)
	if ((running == NODES)); then
		echo "galera.sh: cluster in $DIR already running"
		return 0
	fi
	((running == 0)) || die "$running of $NODES nodes in $DIR are running; start the others with: galera.sh start-node $DIR N"
	init_cluster
	local first n t0=$SECONDS
	first=$(bootstrap_node) ||
		die "no node of $DIR is safe to bootstrap (the cluster was not shut down cleanly); delete $DIR and start afresh"
	launch "$first" --wsrep-new-cluster
	wait_synced "$first" 1
	local size=1
	for n in $(seq 1 "$NODES"); do
		((n == first)) && continue
		launch "$n"
		size=$((size + 1))
		wait_synced "$n" "$size"
	done
	for n in $(seq 1 "$NODES"); do
		wait_synced "$n" "$NODES"
	done
	echo "galera.sh: $NODES-node cluster Synced on 127.0.0.1 ports $(client_port 1),$(client_port 2),$(client_port 3) in $((SECONDS - t0))s (dir $DIR)"
}

stop_node() {
	local n=$1 d pid
	d=$(node_dir "$n")
	pid=$(node_pid "$n") || return 0
	"$ADMIN" --no-defaults --socket="$d/mysql.sock" -uroot \
		--connect-timeout=5 --shutdown-timeout=60 shutdown </dev/null >/dev/null 2>&1 ||
		kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 60; then
		echo "galera.sh: node $n ($pid) did not stop in 60s; killing it" >&2
		kill -9 "$pid" 2>/dev/null || true
		wait_gone "$pid" 10 || die "could not kill node $n ($pid)"
	fi
}

cmd_stop() {
	[[ $# -eq 1 ]] || die "usage: galera.sh stop DIR"
	[[ -d "$1" ]] || return 0
	load_dir "$1"
	need_bins
	local n
	for n in $(seq "$NODES" -1 1); do
		stop_node "$n"
	done
}

node_arg() {
	[[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= NODES)) || die "bad node '$1' (want 1-$NODES)"
}

cmd_kill_node() {
	[[ $# -eq 2 ]] || die "usage: galera.sh kill-node DIR N"
	load_dir "$1"
	node_arg "$2"
	local pid
	pid=$(node_pid "$2") || die "node $2 of $DIR is not running"
	kill -9 "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || die "could not kill node $2 ($pid)"
	echo "galera.sh: node $2 (pid $pid) killed"
}

# recovered_position N — run node N with --wsrep-recover and print the
# position (uuid:seqno) InnoDB recovered, or nothing if there is none.
recovered_position() {
	local n=$1 d log
	d=$(node_dir "$n")
	log="$d/recover.log"
	rm -f "$log"
	if ! "$MARIADBD" --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$log" </dev/null >/dev/null 2>&1; then
		echo "galera.sh: node $n: mariadbd --wsrep-recover failed; its log:" >&2
		cat "$log" >&2 2>/dev/null || true
		exit 1
	fi
	grep -a 'WSREP: Recovered position:' "$log" 2>/dev/null | tail -n 1 | sed 's/.*WSREP: Recovered position: *//' || true
}

cmd_start_node() {
	[[ $# -eq 2 ]] || die "usage: galera.sh start-node DIR N"
	need_bins
	load_dir "$1"
	node_arg "$2"
	local n=$2 running pos t0=$SECONDS
	if node_pid "$n" >/dev/null; then
		echo "galera.sh: node $n already running"
		return 0
	fi
	running=$(running_nodes)
	((running > 0)) || die "no node of $DIR is running, so node $n has no cluster to join; use: galera.sh start $DIR"
	pos=$(recovered_position "$n")
	own "$(node_dir "$n")"
	local log logsize
	log="$(node_dir "$n")/mariadbd.log"
	logsize=$(stat -c %s "$log" 2>/dev/null || echo 0)
	if [[ -n "$pos" ]]; then
		launch "$n" --wsrep-start-position="$pos"
	else
		launch "$n"
	fi
	wait_synced "$n" $((running + 1))
	# How it caught up, from what this start wrote to the log. The SST
	# script runs on every join and says "rsync IST completed" when there
	# was nothing to copy; a full SST may be followed by an IST of the
	# writes made during it, so look for the SST first.
	local how=" (no state transfer)" since
	since=$(tail -c +"$((logsize + 1))" "$log")
	if grep -aq 'SST completed on joiner' <<<"$since"; then
		how=" by a full SST"
	elif grep -aq 'IST received' <<<"$since"; then
		how=" by IST"
	fi
	echo "galera.sh: node $n rejoined at ${pos:-no recovered position} and is Synced in $((SECONDS - t0))s$how"
}

cmd_status() {
	[[ $# -eq 1 ]] || die "usage: galera.sh status DIR"
	need_bins
	load_dir "$1"
	local n pid synced=0
	for n in $(seq 1 "$NODES"); do
		if pid=$(node_pid "$n"); then
			local state size ready
			state=$(wsrep "$n" wsrep_local_state_comment || true)
			size=$(wsrep "$n" wsrep_cluster_size || true)
			ready=$(wsrep "$n" wsrep_ready || true)
			printf 'node %d  port %d  pid %-7s  %-10s  cluster size %s  ready %s\n' "$n" "$(client_port "$n")" "$pid" "${state:-?}" "${size:-?}" "${ready:-?}"
			if [[ "$state" == Synced ]]; then synced=$((synced + 1)); fi
		else
			printf 'node %d  port %d  down\n' "$n" "$(client_port "$n")"
		fi
	done
	((synced == NODES))
}

cmd_env() {
	[[ $# -eq 1 ]] || die "usage: galera.sh env DIR"
	[[ -s "$1/base_port" ]] || die "env: $1/base_port missing; start the cluster first"
	load_dir "$1"
	local self n dsns=() killcmd startcmd
	self=$(abs "$(dirname "${BASH_SOURCE[0]}")")/$(basename "${BASH_SOURCE[0]}")
	for n in $(seq 1 "$NODES"); do
		dsns+=("root@tcp(127.0.0.1:$(client_port "$n"))/")
	done
	killcmd="$(printf '%q ' "$self" kill-node "$DIR")"
	startcmd="$(printf '%q ' "$self" start-node "$DIR")"
	local IFS=,
	printf 'export ARGO_TEST_GALERA_DSNS=%q\n' "${dsns[*]}"
	printf 'export ARGO_TEST_GALERA_KILL_NODE=%q\n' "${killcmd% }"
	printf 'export ARGO_TEST_GALERA_START_NODE=%q\n' "${startcmd% }"
	printf 'export ARGO_TEST_GALERA_LOCK=%q\n' "$DIR/disrupt.lock"
}

[[ $# -ge 1 ]] || die "usage: galera.sh start DIR [BASE_PORT] | stop DIR | kill-node DIR N | start-node DIR N | status DIR | env DIR"
sub=$1
shift
case "$sub" in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
kill-node) cmd_kill_node "$@" ;;
start-node) cmd_start_node "$@" ;;
status) cmd_status "$@" ;;
env) cmd_env "$@" ;;
*) die "unknown subcommand '$sub' (want start, stop, kill-node, start-node, status or env)" ;;
esac
