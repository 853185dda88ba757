# Makefile — entry points for developers and CI (.ci/run calls `make test`).
#
#   make test          gofmt, vet, generated-code check, go test -race, against
#                      SQLite and a throwaway MariaDB (see scripts/test.sh).
#                      To use your own MySQL/MariaDB instead (user needs CREATE
#                      DATABASE):  ARGO_TEST_MYSQL_DSN='user:pw@tcp(127.0.0.1:3306)/' make test
#                      Extra go test flags: GO_TEST_FLAGS='-run TestX -v' GO_TEST_PKGS=./runtime/...
#   make vet           go vet ./...
#   make generate      go generate ./...
#   make bench         run the benchmark (cmd/argobench) on the embedded SQLite;
#                      BENCH_FLAGS='-dsn mysql:... -scale 0.2' to change it
#   make instructions  instructions per call of the client side (sync call,
#                      submit, insert+work) under valgrind's callgrind; needs
#                      valgrind; BENCH_FLAGS as for bench
#   make mariadb-up    start a MariaDB for manual `go test` runs; prints the
#                      exports to use:  eval "$$(make -s mariadb-up)"
#   make mariadb-down  stop it and delete its data
#   make galera-up     start a 3-node Galera cluster on loopback; prints the
#                      exports to use:  eval "$$(make -s galera-up)"
#   make galera-down   stop it and delete its data

SHELL := /usr/bin/env bash
GO ?= go

# State of the `make mariadb-up` server.
MARIADB_DIR ?= $(CURDIR)/.tmp/mariadb
MARIADB_PORT ?= 13306

.PHONY: test vet generate bench instructions mariadb-up mariadb-down galera-up galera-down

# State of the `make galera-up` cluster (node N listens on GALERA_PORT+10(N-1)).
GALERA_DIR ?= $(CURDIR)/.tmp/galera
GALERA_PORT ?= 13410

test:
	@bash scripts/test.sh

vet:
	$(GO) vet ./...

generate:
	$(GO) generate ./...

bench:
	$(GO) run ./cmd/argobench $(BENCH_FLAGS)

instructions:
	$(GO) run ./cmd/argobench -instructions $(BENCH_FLAGS)

mariadb-up:
	@bash scripts/mariadb.sh start "$(MARIADB_DIR)" "$(MARIADB_PORT)" >&2
	@bash scripts/mariadb.sh env "$(MARIADB_DIR)"

mariadb-down:
	@bash scripts/mariadb.sh stop "$(MARIADB_DIR)"
	@rm -rf "$(MARIADB_DIR)"

galera-up:
	@bash scripts/galera.sh start "$(GALERA_DIR)" "$(GALERA_PORT)" >&2
	@bash scripts/galera.sh env "$(GALERA_DIR)"

galera-down:
	@bash scripts/galera.sh stop "$(GALERA_DIR)"
	@rm -rf "$(GALERA_DIR)"
