#!/usr/bin/env bash
# scripts/mariadb.sh — run a private, throwaway MariaDB server for tests.
#
# Usage:
#   scripts/mariadb.sh start DIR PORT   initialise DIR (first time only) and start
#                                       a server on 127.0.0.1:PORT; waits until it
#                                       accepts connections. No-op if running.
#   scripts/mariadb.sh stop DIR         clean shutdown; waits until it has exited.
#                                       No-op if not running.
#   scripts/mariadb.sh kill DIR         SIGKILL the server (crash simulation).
#   scripts/mariadb.sh env DIR          print `export ARGO_TEST_MYSQL_*=...` lines
#                                       for the server in DIR (eval-able).
#
# Everything lives in DIR: data/ (the datadir), mysql.sock, mariadbd.pid,
# mariadbd.log and port (the port given to the first `start`, so a later
# `start DIR` may omit PORT). Stopping and starting again keeps the data.
#
# Root gets a password-less account for 127.0.0.1 (and the socket); the server
# only listens on 127.0.0.1. Durability settings are MariaDB's defaults.
#
# Environment:
#   ARGO_MARIADB_START_TIMEOUT  seconds to wait for the server (default 60)
#   ARGO_MARIADB_EXTRA_ARGS     more mariadbd options for `start`, split on
#                               spaces (e.g. --innodb-read-only=ON: a server
#                               that takes no writes, as an Aurora reader)
set -euo pipefail

die() { echo "mariadb.sh: $*" >&2; exit 1; }

# find_bin NAME... — first of the given programs found in PATH or /usr/sbin,
# /usr/bin (PATH of non-root users often lacks /usr/sbin).
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

need_bins() {
	MARIADBD=$(find_bin mariadbd mysqld) ||
		die "mariadbd not found; install it with: sudo apt-get install mariadb-server mariadb-client"
	INSTALL_DB=$(find_bin mariadb-install-db mysql_install_db) ||
		die "mariadb-install-db not found; install it with: sudo apt-get install mariadb-server"
	ADMIN=$(find_bin mariadb-admin mysqladmin) ||
		die "mariadb-admin not found; install it with: sudo apt-get install mariadb-client"
	CLIENT=$(find_bin mariadb mysql) ||
		die "mariadb client not found; install it with: sudo apt-get install mariadb-client"
}

# abs DIR — absolute path of DIR (which must exist).
abs() { (cd "$1" && pwd); }

# server_pid DIR — pid of the running server for DIR, or fail.
server_pid() {
	local pidfile="$1/mariadbd.pid" pid
	[[ -s "$pidfile" ]] || return 1
	pid=$(<"$pidfile")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	alive "$pid" || return 1
	echo "$pid"
}

# alive PID — the process exists and is not a zombie.
alive() {
	local state
	[[ -r "/proc/$1/stat" ]] || { kill -0 "$1" 2>/dev/null; return; }
	# Field 3 of /proc/PID/stat is the state; the name (field 2) may contain
	# spaces, so cut after the closing parenthesis.
	state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# wait_gone PID SECONDS — wait for the process to exit; fail on timeout.
wait_gone() {
	local pid=$1 deadline=$((SECONDS + $2))
	while alive "$pid"; do
		((SECONDS < deadline)) || return 1
		sleep 0.1
	done
}

# sql DIR PORT QUERY — run a query over TCP as root, the way tests connect.
sql() {
	"$CLIENT" --no-defaults --protocol=tcp -h127.0.0.1 -P"$2" -uroot \
		--connect-timeout=2 -N -B -e "$3" </dev/null
}

log_tail() {
	echo "---- last lines of $1/mariadbd.log ----" >&2
	tail -n 40 "$1/mariadbd.log" >&2 2>/dev/null || echo "(no log)" >&2
	echo "----" >&2
}

cmd_start() {
	[[ $# -ge 1 && $# -le 2 ]] || die "usage: mariadb.sh start DIR [PORT]"
	need_bins
	mkdir -p "$1"
	local dir port
	dir=$(abs "$1")
	if [[ $# -eq 2 ]]; then
		port=$2
	elif [[ -s "$dir/port" ]]; then
		port=$(<"$dir/port")
	else
		die "start: no PORT given and $dir/port does not exist"
	fi
	[[ "$port" =~ ^[0-9]+$ ]] || die "start: bad port '$port'"

	if server_pid "$dir" >/dev/null; then
		echo "mariadb.sh: server in $dir already running"
		return 0
	fi

	# mariadbd refuses to run as root unless told to; as anyone else --user
	# would only produce a warning, so leave it out.
	local as_user=()
	if [[ $(id -u) -eq 0 ]]; then
		as_user=(--user=root)
	fi

	# First start: create the system tables. --no-defaults keeps the host's
	# /etc/mysql config (and any ~/.my.cnf) out of it.
	if [[ ! -d "$dir/data/mysql" ]]; then
		rm -rf "$dir/data"
		if ! "$INSTALL_DB" --no-defaults "${as_user[@]}" \
			--datadir="$dir/data" \
			--auth-root-authentication-method=normal \
			--skip-name-resolve --skip-test-db \
			>"$dir/install.log" 2>&1 </dev/null; then
			echo "mariadb.sh: mariadb-install-db failed; its output:" >&2
			cat "$dir/install.log" >&2
			exit 1
		fi
	fi
	echo "$port" >"$dir/port"

	# Start detached (own session, no inherited stdio) so the caller — a
	# shell, make, or a Go test running this via exec — does not wait on it
	# and a Ctrl-C in the terminal does not reach it; `stop` shuts it down.
	rm -f "$dir/mariadbd.pid"
	# A tmpdir of its own: at start mariadbd deletes every "#sql*" file in its
	# tmpdir as a leftover of its own, so servers sharing /tmp (make test
	# starts several) delete each other's live temporary tables ("Error on
	# delete of '/tmp/#sql-update-….MAD'" in a multi-table UPDATE).
	mkdir -p "$dir/tmp"
	local setsid=()
	if command -v setsid >/dev/null 2>&1; then
		setsid=(setsid)
	fi
	"${setsid[@]}" "$MARIADBD" --no-defaults "${as_user[@]}" \
		--datadir="$dir/data" \
		--tmpdir="$dir/tmp" \
		--socket="$dir/mysql.sock" \
		--pid-file="$dir/mariadbd.pid" \
		--log-error="$dir/mariadbd.log" \
		--bind-address=127.0.0.1 --port="$port" \
		--skip-name-resolve \
		--innodb-buffer-pool-size=256M \
		--max-connections=500 \
		--max-allowed-packet=16M \
		--character-set-server=utf8mb4 \
		--collation-server=utf8mb4_general_ci \
		${ARGO_MARIADB_EXTRA_ARGS:-} \
		</dev/null >>"$dir/mariadbd.log" 2>&1 &
	local pid=$!

	# Wait until root can run a query over TCP (mariadb-admin ping alone
	# succeeds even when the login would be refused).
	local timeout=${ARGO_MARIADB_START_TIMEOUT:-60}
	local deadline=$((SECONDS + timeout))
	until sql "$dir" "$port" "SELECT 1" >/dev/null 2>&1; do
		# $pid is mariadbd itself (setsid execs it when, as here, there is no
		# job control); check the pid file too in case setsid had to fork.
		if ! alive "$pid" && ! server_pid "$dir" >/dev/null; then
			echo "mariadb.sh: mariadbd exited during startup (port $port)" >&2
			log_tail "$dir"
			exit 1
		fi
		if ((SECONDS >= deadline)); then
			echo "mariadb.sh: mariadbd not accepting connections after ${timeout}s" >&2
			log_tail "$dir"
			kill -9 "$pid" 2>/dev/null || true
			exit 1
		fi
		sleep 0.1
	done
	echo "mariadb.sh: server up on 127.0.0.1:$port (pid $pid, dir $dir)"
}

cmd_stop() {
	[[ $# -eq 1 ]] || die "usage: mariadb.sh stop DIR"
	[[ -d "$1" ]] || return 0
	local dir pid
	dir=$(abs "$1")
	pid=$(server_pid "$dir") || return 0
	need_bins
	# Clean shutdown over the socket; fall back to signals if that fails.
	"$ADMIN" --no-defaults --socket="$dir/mysql.sock" -uroot \
		--connect-timeout=5 --shutdown-timeout=60 shutdown </dev/null >/dev/null 2>&1 ||
		kill -TERM "$pid" 2>/dev/null || true
	if ! wait_gone "$pid" 60; then
		echo "mariadb.sh: server $pid did not stop in 60s; killing it" >&2
		kill -9 "$pid" 2>/dev/null || true
		wait_gone "$pid" 10 || die "could not kill server $pid"
	fi
}

cmd_kill() {
	[[ $# -eq 1 ]] || die "usage: mariadb.sh kill DIR"
	[[ -d "$1" ]] || return 0
	local dir pid
	dir=$(abs "$1")
	pid=$(server_pid "$dir") || return 0
	kill -9 "$pid" 2>/dev/null || true
	wait_gone "$pid" 10 || die "could not kill server $pid"
}

cmd_env() {
	[[ $# -eq 1 ]] || die "usage: mariadb.sh env DIR"
	need_bins
	local dir port self
	dir=$(abs "$1")
	[[ -s "$dir/port" ]] || die "env: $dir/port missing; start the server first"
	port=$(<"$dir/port")
	self=$(abs "$(dirname "${BASH_SOURCE[0]}")")/$(basename "${BASH_SOURCE[0]}")
	# Values are quoted with %q twice over: once so the commands survive
	# `sh -c "$VAR"` (paths with spaces), once for this eval-able output.
	local admin start stop killcmd
	admin="$(printf '%q ' "$ADMIN" --no-defaults "--socket=$dir/mysql.sock" -uroot)"
	start="$(printf '%q ' "$self" start "$dir" "$port")"
	stop="$(printf '%q ' "$self" stop "$dir")"
	killcmd="$(printf '%q ' "$self" kill "$dir")"
	printf 'export ARGO_TEST_MYSQL_DSN=%q\n' "root@tcp(127.0.0.1:$port)/"
	printf 'export ARGO_TEST_MYSQL_ADMIN=%q\n' "${admin% }"
	printf 'export ARGO_TEST_MYSQL_START=%q\n' "${start% }"
	printf 'export ARGO_TEST_MYSQL_STOP=%q\n' "${stop% }"
	printf 'export ARGO_TEST_MYSQL_KILL=%q\n' "${killcmd% }"
}

[[ $# -ge 1 ]] || die "usage: mariadb.sh start DIR [PORT] | stop DIR | kill DIR | env DIR"
sub=$1
shift
case "$sub" in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
kill) cmd_kill "$@" ;;
env) cmd_env "$@" ;;
*) die "unknown subcommand '$sub' (want start, stop, kill or env)" ;;
esac
