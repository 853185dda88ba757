package testdb

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shared server that `make test` starts can also be stopped and started
// by tests, through these environment variables (shell commands, run with
// `sh -c`). They are unset when the user brought their own server.
const (
	EnvMySQLStart = "ARGO_TEST_MYSQL_START" // start again (same port, same data)
	EnvMySQLStop  = "ARGO_TEST_MYSQL_STOP"  // clean shutdown
	EnvMySQLKill  = "ARGO_TEST_MYSQL_KILL"  // SIGKILL (crash)
	EnvMySQLAdmin = "ARGO_TEST_MYSQL_ADMIN" // mariadb-admin with connection flags
)

// MySQLServer is a MariaDB server of a test's own, started by NewMySQLServer.
//
// Prefer it to stopping the shared server (ARGO_TEST_MYSQL_STOP): `go test
// ./...` runs several packages at once, and they all use the shared server.
type MySQLServer struct {
	ServerDSN string // go-sql-driver DSN without database, like ARGO_TEST_MYSQL_DSN
	dir       string
	port      int
	script    string
}

// NewMySQLServer starts a private MariaDB server on 127.0.0.1 (a second or two,
// more on first use of a cold disk) and removes it when the test ends. It
// needs MariaDB installed locally; without it the test is skipped, or fails
// under CI.
func NewMySQLServer(t testing.TB) *MySQLServer {
	t.Helper()
	script, err := mariadbScript()
	if err != nil {
		skipOrFail(t, "testdb: "+err.Error())
	}
	if _, err := lookMariadbd(); err != nil {
		skipOrFail(t, "testdb: mariadbd not found: install MariaDB (sudo apt-get install mariadb-server mariadb-client)")
	}
	// Not t.TempDir(): the socket path must stay under ~100 bytes.
	dir, err := os.MkdirTemp("", "argo-my-")
	if err != nil {
		t.Fatal(err)
	}
	s := &MySQLServer{dir: filepath.Join(dir, "server"), script: script}
	t.Cleanup(func() {
		if out, err := s.run("stop"); err != nil {
			t.Logf("testdb: stopping private MariaDB: %v\n%s", err, out)
			s.run("kill")
		}
		adminDBs.Delete(s.ServerDSN)
		os.RemoveAll(dir)
	})

	// A port found free may be taken before the server binds it: retry.
	var out []byte
	for attempt := 0; attempt < 3; attempt++ {
		s.port = freePort(t)
		if out, err = s.run("start", strconv.Itoa(s.port)); err == nil {
			break
		}
		s.run("kill")
	}
	if err != nil {
		t.Fatalf("testdb: starting private MariaDB: %v\n%s", err, out)
	}
	s.ServerDSN = fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port)
	return s
}

// DSN creates a fresh database on this server, like MySQLDSN does on the
// shared one, and returns its "mysql:" DSN.
func (s *MySQLServer) DSN(t testing.TB) string {
	t.Helper()
	return newDatabase(t, s.ServerDSN)
}

// Stop shuts the server down cleanly and waits until it has exited.
func (s *MySQLServer) Stop(t testing.TB) { t.Helper(); s.must(t, "stop") }

// Kill kills the server with SIGKILL, as in a crash.
func (s *MySQLServer) Kill(t testing.TB) { t.Helper(); s.must(t, "kill") }

// Start starts the server again on the same port with the same data, and
// waits until it accepts connections.
func (s *MySQLServer) Start(t testing.TB) { t.Helper(); s.must(t, "start", strconv.Itoa(s.port)) }

func (s *MySQLServer) must(t testing.TB, args ...string) {
	t.Helper()
	if out, err := s.run(args...); err != nil {
		t.Fatalf("testdb: mariadb.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (s *MySQLServer) run(args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{s.script, args[0], s.dir}, args[1:]...)...)
	return cmd.CombinedOutput()
}

// mariadbScript finds scripts/mariadb.sh: from ARGO_TEST_MARIADB_SH, else by
// walking up from the working directory (a package dir under go test) to the
// module root.
func mariadbScript() (string, error) {
	if p := os.Getenv("ARGO_TEST_MARIADB_SH"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "scripts", "mariadb.sh")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%s not found", p)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("scripts/mariadb.sh not found: no go.mod above the working directory")
		}
		dir = parent
	}
}

func lookMariadbd() (string, error) {
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("mariadbd not found")
}

// freePort returns a port with nothing listening on 127.0.0.1, below the
// kernel's ephemeral range so an outgoing connection cannot grab it while the
// server is stopped.
func freePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 13000 + rand.IntN(19000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("testdb: no free TCP port on 127.0.0.1")
	return 0
}

// shared server control, for tests that really need to take down the server
// all packages share (see MySQLServer for the safer way).

// RestartableMySQL returns the shell commands that stop, start and kill the
// shared server, skipping the test (failing under CI) when `make test` did
// not provide them.
func RestartableMySQL(t testing.TB) (stop, start, kill string) {
	t.Helper()
	stop, start, kill = os.Getenv(EnvMySQLStop), os.Getenv(EnvMySQLStart), os.Getenv(EnvMySQLKill)
	if stop == "" || start == "" {
		skipOrFail(t, EnvMySQLStop+"/"+EnvMySQLStart+" not set: run the tests with `make test`")
	}
	return stop, start, kill
}

// Sh runs a shell command such as those from RestartableMySQL, failing the
// test if it fails.
func Sh(t testing.TB, command string) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command("sh", "-c", command).CombinedOutput()
	if err != nil {
		t.Fatalf("testdb: %s: %v\n%s", command, err, out)
	}
	t.Logf("testdb: %s (%s)", command, time.Since(start).Round(time.Millisecond))
}
