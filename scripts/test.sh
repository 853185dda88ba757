#!/usr/bin/env bash
# scripts/test.sh — the project's single test command (`make test`).
#
# Phases, in order, stopping at the first failure (the MariaDB server and
# the Galera cluster are started just before the tests):
#   1. gofmt      `gofmt -l .` must print nothing
#   2. vet        go vet ./...
#   3. generate   go generate ./... must not change any file
#   4. test       go test -race -count=1 -timeout 40m ./...
#   5. cost gate  go test -run TestCostBaseline ./cmd/argobench/internal/costgate
#                 (without -race: counts compared with the committed baseline)
#
# Databases: tests get MariaDB/MySQL through ARGO_TEST_MYSQL_DSN, a
# go-sql-driver DSN without a database name, e.g. `root:pw@tcp(127.0.0.1:3306)/`;
# its user needs CREATE DATABASE rights (each test makes its own database).
#   - If ARGO_TEST_MYSQL_DSN is set, that server is used as is.
#   - Otherwise a throwaway MariaDB server is started on 127.0.0.1 with its
#     data in a temp dir, and removed on exit (scripts/mariadb.sh does the
#     work). MariaDB is installed with apt-get if missing and we are root.
#     ARGO_TEST_MYSQL_START / _STOP / _KILL / _ADMIN are exported too, for
#     tests that take the server down and bring it back.
#
# Galera: tests that need a cluster (the storage conformance suite's
# "galera" backend, the cluster chaos test) get it through
# ARGO_TEST_GALERA_DSNS, the 3 nodes' DSNs (same form), comma-separated.
#   - If ARGO_TEST_GALERA_DSNS is set, that cluster is used as is.
#   - Otherwise a throwaway 3-node MariaDB Galera cluster is started on
#     127.0.0.1 with its data in a temp dir, and removed on exit
#     (scripts/galera.sh). galera-4 and rsync are installed with apt-get if
#     missing and we are root. ARGO_TEST_GALERA_KILL_NODE / _START_NODE /
#     _LOCK are exported too, for the tests that kill a node.
#   - Without root and without Galera installed, no cluster is started: the
#     tests that need one say how to get one and are skipped (under CI,
#     CI=true, they fail).
#
# promtool (metrics/alerts_test.go checks the shipped alerting rules with
# it) is installed with apt-get (Debian's prometheus package) if missing
# and we are root; otherwise that test is skipped (under CI it fails).
#
# Environment knobs:
#   ARGO_TEST_MYSQL_DSN   use this server instead of starting one
#   ARGO_TEST_GALERA_DSNS use this cluster instead of starting one
#   ARGO_TEST_CHROMIUM    use this browser for the console tests (default /usr/bin/chromium)
#   GO_TEST_FLAGS         extra flags for go test, e.g. "-run TestFoo -v"
#   GO_TEST_PKGS          packages to test (default ./..., the slowest first)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
MARIADB_SH="$ROOT/scripts/mariadb.sh"
GALERA_SH="$ROOT/scripts/galera.sh"
# For testdb.NewMySQLServer, which starts private servers with it.
export ARGO_TEST_MARIADB_SH="$MARIADB_SH"

# ---------------------------------------------------------------- helpers

# Wall-clock microseconds, for phase timings.
now_us() { local t=${EPOCHREALTIME/./}; echo "$((10#$t))"; }
fmt_secs() { printf '%d.%01ds' $(($1 / 1000000)) $((($1 % 1000000) / 100000)); }

T_START=$(now_us)
TIMINGS=()    # "name<TAB>seconds<TAB>status"
PHASE=""      # phase now running, for the failure summary
PHASE_T0=0

phase_begin() {
	PHASE=$1
	PHASE_T0=$(now_us)
	echo
	echo "==> $PHASE"
}

phase_end() {
	local dt=$(($(now_us) - PHASE_T0))
	TIMINGS+=("$PHASE	$(fmt_secs "$dt")	${1:-ok}")
	echo "<== $PHASE: ${1:-ok} ($(fmt_secs "$dt"))"
	PHASE=""
}

# fail MSG — end the current phase as failed and exit (the trap cleans up).
fail() {
	echo >&2
	echo "FAIL: $*" >&2
	if [[ -n "$PHASE" ]]; then phase_end FAILED; fi
	exit 1
}

summary() {
	local line
	echo
	echo "---- timings ----"
	for line in "${TIMINGS[@]}"; do
		IFS=$'\t' read -r name secs status <<<"$line"
		printf '  %-24s %8s  %s\n' "$name" "$secs" "$status"
	done
	printf '  %-24s %8s\n' total "$(fmt_secs $(($(now_us) - T_START)))"
}

# ---------------------------------------------------------------- cleanup

DB_DIR=""      # temp dir of the server we started, if any
GALERA_DIR=""  # temp dir of the cluster we started, if any

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n "$PHASE" ]]; then
		if ((rc >= 128)); then phase_end INTERRUPTED; else phase_end FAILED; fi
	fi
	if [[ -n "$GALERA_DIR" ]]; then
		echo
		echo "==> stopping the Galera cluster ($GALERA_DIR)"
		bash "$GALERA_SH" stop "$GALERA_DIR/cluster" || true
		rm -rf "$GALERA_DIR" || true
	fi
	if [[ -n "$DB_DIR" ]]; then
		echo
		echo "==> stopping MariaDB ($DB_DIR)"
		"$MARIADB_SH" stop "$DB_DIR/server" || "$MARIADB_SH" kill "$DB_DIR/server" || true
		rm -rf "$DB_DIR" || true
	fi
	summary
	if ((rc == 0)); then
		echo "make test: PASS"
	else
		echo "make test: FAIL (exit $rc)"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "==> $(go version) on $(uname -sm), $(nproc 2>/dev/null || echo '?') cores"

# ------------------------------------------------------- toolchain checks

is_root() { [[ $(id -u) -eq 0 ]]; }

# Another apt or dpkg run (unattended upgrades on a fresh machine) holds the
# package locks: wait for it instead of failing. DPkg::Lock::Timeout makes
# apt-get wait for the dpkg lock; `apt-get update` is retried while the
# package lists are locked, for up to APT_LOCK_WAIT seconds in all.
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600}
APT_UPDATED=""
apt_install() {
	export DEBIAN_FRONTEND=noninteractive
	local waited=0
	if [[ -z "$APT_UPDATED" ]]; then
		until apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" update -q </dev/null; do
			if ((waited >= APT_LOCK_WAIT)); then
				echo "apt-get update kept failing for ${APT_LOCK_WAIT}s" >&2
				return 1
			fi
			echo "apt-get update failed (another apt or dpkg run holds its lock?); trying again in 10s" >&2
			sleep 10
			waited=$((waited + 10))
		done
		APT_UPDATED=1
	fi
	apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" install -y -q --no-install-recommends "$@" </dev/null
}

# -race needs cgo and a C compiler (without one, go quietly turns cgo off).
cc=$(go env CC)
if [[ "${CGO_ENABLED:-}" == 0 ]]; then
	fail "go test -race needs cgo; unset CGO_ENABLED"
fi
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
	if is_root; then
		phase_begin "install gcc (for -race)"
		apt_install gcc libc6-dev || fail "could not install gcc"
		phase_end
	else
		fail "go test -race needs a C compiler ($cc); install one: sudo apt-get install gcc"
	fi
fi

# ------------------------------------------------------------- database

have_mariadbd() {
	command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 ||
		[[ -x /usr/sbin/mariadbd || -x /usr/sbin/mysqld ]]
}

have_mariadb_tools() {
	have_mariadbd &&
		{ command -v mariadb-install-db || command -v mysql_install_db; } >/dev/null 2>&1 &&
		{ command -v mariadb-admin || command -v mysqladmin; } >/dev/null 2>&1 &&
		{ command -v mariadb || command -v mysql; } >/dev/null 2>&1
}

# free_port — print a TCP port with nothing listening on 127.0.0.1. Picked
# below the kernel's ephemeral range (32768+), so no outgoing connection can
# take it between a stop and a start of the server.
free_port() {
	local port
	for _ in $(seq 1 200); do
		port=$((13000 + RANDOM % 19000))
		# Connection refused (fails quickly) means the port is free.
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# free_ports N — print a port P such that P..P+N-1 are all free on
# 127.0.0.1 (below the ephemeral range, as free_port).
free_ports() {
	local base i busy
	for _ in $(seq 1 200); do
		base=$((13000 + RANDOM % 19000))
		busy=""
		for ((i = 0; i < $1; i++)); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$((base + i))") 2>/dev/null; then
				busy=1
				break
			fi
		done
		if [[ -z "$busy" ]]; then
			echo "$base"
			return 0
		fi
	done
	return 1
}

have_galera() {
	have_mariadb_tools && command -v rsync >/dev/null 2>&1 &&
		{ [[ -f /usr/lib/galera/libgalera_smm.so ]] || [[ -f /usr/lib/libgalera_smm.so ]]; }
}

# ------------------------------------------------------------- checks

phase_begin "gofmt"
out=$(gofmt -l . 2>&1) || fail "gofmt failed:
$out"
[[ -z "$out" ]] || fail "these files need gofmt (run: gofmt -w .):
$out"
phase_end

phase_begin "go vet"
go vet ./... || fail "go vet ./..."
phase_end

# Generated code must be up to date: `go generate` may not change any file.
# Inside git we compare a fingerprint of every tracked and untracked
# (non-ignored) file before and after, which on a clean checkout (CI) is the
# same as `git diff --exit-code` plus "no new untracked files", and does not
# trip over a developer's uncommitted work.
fingerprint() {
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sha256sum 2>/dev/null | LC_ALL=C sort || true
}

phase_begin "go generate (freshness)"
in_git=""
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	in_git=1
	before=$(fingerprint)
else
	echo "note: not inside a git work tree; running go generate without the freshness check"
fi
go generate ./... || fail "go generate ./..."
if [[ -n "$in_git" ]]; then
	after=$(fingerprint)
	if [[ "$before" != "$after" ]]; then
		echo "go generate changed these files (commit the regenerated code):" >&2
		diff <(echo "$before") <(echo "$after") | sed -n 's/^[<>] [0-9a-f]*  /  /p' | LC_ALL=C sort -u >&2 || true
		git --no-pager diff --stat >&2 || true
		fail "generated code is stale"
	fi
fi
phase_end

# promtool checks the shipped alerting rules (metrics/alerts_test.go); it
# comes with Debian's prometheus package. Installed like MariaDB: with
# apt-get if missing and we are root; otherwise that test says how to get
# it and is skipped (under CI, CI=true, it fails).
if ! command -v promtool >/dev/null 2>&1; then
	if is_root; then
		phase_begin "install promtool"
		echo "promtool not found; installing prometheus (which has it) with apt-get"
		apt_install prometheus || fail "apt-get install of prometheus (promtool) failed"
		phase_end
	else
		echo "==> promtool not found: the alerting-rules test is skipped (install it: sudo apt-get install prometheus)"
	fi
fi

# Chromium drives the console's end-to-end tests (internal/testbrowser):
# Debian's chromium package, installed like MariaDB (with apt-get if missing
# and we are root) and handed to the tests as ARGO_TEST_CHROMIUM. Without it
# those tests say how to get it and are skipped (under CI, CI=true, they fail).
if [[ -z "${ARGO_TEST_CHROMIUM:-}" ]]; then
	if [[ ! -x /usr/bin/chromium ]] && is_root; then
		phase_begin "install chromium"
		# fonts-liberation (a Recommends left out here) so pages have text.
		echo "chromium not found; installing Debian's chromium and fonts-liberation with apt-get"
		apt_install chromium fonts-liberation || fail "apt-get install of chromium failed"
		phase_end
	fi
	if [[ -x /usr/bin/chromium ]]; then
		export ARGO_TEST_CHROMIUM=/usr/bin/chromium
	else
		echo "==> chromium not found: the console's browser tests are skipped (install it: sudo apt-get install chromium)"
	fi
fi

# The database comes last, so quick checks fail before any install/start.
if [[ -n "${ARGO_TEST_MYSQL_DSN:-}" ]]; then
	echo "==> using the MySQL/MariaDB server from ARGO_TEST_MYSQL_DSN"
else
	phase_begin "start MariaDB"
	if ! have_mariadb_tools; then
		if is_root; then
			echo "MariaDB not found; installing mariadb-server and mariadb-client with apt-get"
			apt_install mariadb-server mariadb-client || fail "apt-get install of MariaDB failed"
		else
			fail "MariaDB not found (need mariadbd, mariadb-install-db, mariadb-admin, mariadb).
  Either install it:   sudo apt-get install mariadb-server mariadb-client
  or point the tests at a server of your own (the user needs CREATE DATABASE):
    ARGO_TEST_MYSQL_DSN='user:password@tcp(127.0.0.1:3306)/' make test"
		fi
	fi
	DB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/argo-mariadb.XXXXXX")
	# A port may be taken between picking and binding: retry with another.
	started=""
	for attempt in 1 2 3; do
		port=$(free_port) || fail "no free TCP port found on 127.0.0.1"
		if "$MARIADB_SH" start "$DB_DIR/server" "$port"; then
			started=1
			break
		fi
		echo "start on port $port failed (attempt $attempt)" >&2
		"$MARIADB_SH" kill "$DB_DIR/server" || true
	done
	[[ -n "$started" ]] || fail "could not start MariaDB"
	eval "$("$MARIADB_SH" env "$DB_DIR/server")"
	echo "ARGO_TEST_MYSQL_DSN=$ARGO_TEST_MYSQL_DSN"
	phase_end
fi

if [[ -n "${ARGO_TEST_GALERA_DSNS:-}" ]]; then
	echo "==> using the Galera cluster from ARGO_TEST_GALERA_DSNS"
else
	phase_begin "start Galera cluster"
	if ! have_galera; then
		if is_root; then
			echo "Galera not found; installing galera-4, rsync and mariadb-server with apt-get"
			apt_install galera-4 rsync mariadb-server mariadb-client || fail "apt-get install of galera-4 failed"
		elif [[ -n "${CI:-}" ]]; then
			fail "Galera not found (need galera-4, rsync, mariadb-server) and not root to install it: under CI the cluster tests must run"
		else
			echo "note: Galera not found (need galera-4, rsync, mariadb-server) and not root: no cluster started."
			echo "  The tests that need one are skipped (they fail under CI). To run them:"
			echo "    sudo apt-get install galera-4 rsync mariadb-server"
		fi
	fi
	if have_galera; then
		GALERA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/argo-galera.XXXXXX")
		# The nodes run as the mysql user when we are root: it must reach the dir.
		chmod 0755 "$GALERA_DIR"
		started=""
		for attempt in 1 2 3; do
			# Node N uses base+10*(N-1) .. +3: 30 ports cover the three.
			base=$(free_ports 30) || fail "no 30 free TCP ports found on 127.0.0.1"
			if bash "$GALERA_SH" start "$GALERA_DIR/cluster" "$base"; then
				started=1
				break
			fi
			echo "Galera start on ports $base+ failed (attempt $attempt)" >&2
			bash "$GALERA_SH" stop "$GALERA_DIR/cluster" || true
			rm -rf "$GALERA_DIR/cluster"
		done
		[[ -n "$started" ]] || fail "could not start the Galera cluster"
		eval "$(bash "$GALERA_SH" env "$GALERA_DIR/cluster")"
		echo "ARGO_TEST_GALERA_DSNS=$ARGO_TEST_GALERA_DSNS"
		phase_end
	else
		phase_end "skipped (no Galera)"
	fi
fi

phase_begin "go test -race"
# The longest packages are named first: go test starts the test binaries
# it may run at once (one per core) in the order the packages are named,
# and ./... alone names them alphabetically, which left runtime (the
# longest, ~11 min) to start late and run alone at the end. The rest of
# ./... follows (a package named twice runs once).
slowest_first="./runtime/ ./internal/faultcheck/ ./internal/storage/mysqldriver/ ./internal/storage/sqlitedriver/ ./internal/chaos/ ./internal/failover/ ./cmd/argoctl/"
# shellcheck disable=SC2086  # GO_TEST_FLAGS / GO_TEST_PKGS are word lists
go test -race -count=1 -timeout 40m ${GO_TEST_FLAGS:-} ${GO_TEST_PKGS:-$slowest_first ./...} </dev/null ||
	fail "go test"
phase_end

# The cost gate (docs/performance.md, "The cost gate") compares statement,
# round-trip and commit counts with a committed baseline; the race detector
# slows the runtime enough to change how its poller's wake-ups coalesce, so
# under -race it only runs the workloads, and the comparison runs here.
if [[ -z "${GO_TEST_PKGS:-}" ]]; then
	phase_begin "cost gate (go test -run TestCostBaseline, without -race)"
	go test -count=1 -timeout 10m -run 'TestCostBaseline$' ./cmd/argobench/internal/costgate </dev/null ||
		fail "cost gate: a count rose over cmd/argobench/internal/costgate/testdata/cost_baseline.json (see the table above)"
	phase_end
fi
