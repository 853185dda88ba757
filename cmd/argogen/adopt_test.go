//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeSteps is what README.md's "Using argo in your package" says to do,
// read from the fenced block after each <!-- readme-test: … --> marker so that
// the page and this test cannot drift apart.
type readmeSteps struct {
	commands [][]string        // go commands, in page order
	files    map[string]string // file name → contents
}

func readReadmeSteps(t *testing.T, path string) readmeSteps {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := readmeSteps{files: map[string]string{}}
	lines := strings.Split(string(src), "\n")
	for i := 0; i < len(lines); i++ {
		marker, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- readme-test:")
		if !ok {
			continue
		}
		marker = strings.TrimSpace(strings.TrimSuffix(marker, "-->"))
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: marker %q is not followed by a fenced block", path, i+1, marker)
		}
		var block []string
		for i += 2; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			block = append(block, lines[i])
		}
		switch {
		case marker == "commands":
			for _, line := range block {
				if c, _, _ := strings.Cut(line, "#"); strings.TrimSpace(c) != "" {
					steps.commands = append(steps.commands, strings.Fields(c))
				}
			}
		case strings.HasPrefix(marker, "file "):
			steps.files[strings.TrimSpace(strings.TrimPrefix(marker, "file "))] = strings.Join(block, "\n") + "\n"
		default:
			t.Fatalf("%s:%d: unknown marker %q", path, i+1, marker)
		}
	}
	if len(steps.commands) == 0 || len(steps.files) == 0 {
		t.Fatalf("%s: no readme-test commands or files found", path)
	}
	return steps
}

// TestReadmeAdoption runs README.md's adoption steps in a new module outside
// the repository: go mod init, the replace pointing at this clone, go get -tool
// and go get, the page's files written after the commands before `go generate`,
// then `go run .`, which must call the wrapper, and stop on SIGINT with status 0.
//
// It runs offline from the module cache (the repository's dependencies are
// there once it has built): GOPROXY=off forbids downloads, and GOSUMDB=off
// because `go get` otherwise asks the checksum database to confirm each module
// it adds to a new go.sum even when the module is cached (it fails with
// "verifying module: … lookup sum.golang.org"); the hashes written to go.sum
// still come from the cached files. GOFLAGS=-mod=mod lets the go command
// update go.mod as it goes (the steps also pass with the default -mod=readonly:
// the two go get leave go.mod and go.sum complete). The README has no `go mod tidy`: offline it fails
// (it wants the test dependencies of golang.org/x/tools, not cached), and it
// is not needed.
func TestReadmeAdoption(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a new module with the go command; not in -short")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	steps := readReadmeSteps(t, filepath.Join(root, "README.md"))
	dir := t.TempDir()
	// The steps run offline, from the module cache. A new module that
	// requires argo loads argo's whole module graph, go.mod files of
	// versions argo's own (pruned) builds never read among them (go-logr's
	// v1.2.2, required by stdr): whether they were in the cache depended on
	// which package's tests ran first. Loading the graph here, as a
	// newcomer's first go command would, puts them there.
	graph := exec.Command("go", "mod", "graph")
	graph.Dir = root
	if out, err := graph.CombinedOutput(); err != nil {
		t.Fatalf("go mod graph in %s (fills the module cache for the offline steps): %v\n%s", root, err, out)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off")

	filesWritten, ranProgram, ranStats := false, false, false
	for _, args := range steps.commands {
		if args[0] != "go" {
			t.Fatalf("README command %q: the test runs only go commands", strings.Join(args, " "))
		}
		for i := range args {
			// The README's local clone is ../argo; here it is this repository.
			args[i] = strings.ReplaceAll(args[i], "=../argo", "="+root)
		}
		if !filesWritten && (args[1] == "generate" || args[1] == "run") {
			for name, content := range steps.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			filesWritten = true
		}
		if slices.Equal(args, []string{"go", "run", "."}) {
			runUntilInterrupted(t, dir, env, args)
			ranProgram = true
			continue
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if slices.Contains(args, "stats") {
			// argoctl stats after the run: the one call succeeded.
			if !regexp.MustCompile(`(?m)^succeeded +1$`).Match(out) {
				t.Errorf("%s: no \"succeeded 1\" line:\n%s", strings.Join(args, " "), out)
			}
			ranStats = true
		}
	}
	if !filesWritten || !ranProgram || !ranStats {
		t.Fatal("README's commands lack go generate, go run . or argoctl stats")
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mod, []byte("\ntool github.com/argo-retry/argo/cmd/argogen\n")) {
		t.Errorf("go.mod has no tool directive for argogen:\n%s", mod)
	}
	if _, err := os.Stat(filepath.Join(dir, "argo_gen.go")); err != nil {
		t.Errorf("go generate wrote no argo_gen.go: %v", err)
	}
	// sqlite:argo.db lands in the working directory, as the README says.
	if _, err := os.Stat(filepath.Join(dir, "argo.db")); err != nil {
		t.Errorf("no argo.db in the working directory: %v", err)
	}
}

// runUntilInterrupted starts `go run .`, waits for the wrapper's line, sends
// SIGINT to the program (the child of go run: go run itself exits 1 when it
// is interrupted, whatever the program does), and expects the program's
// bounded Stop and a zero exit status, which go run passes on.
func runUntilInterrupted(t *testing.T, dir string, env, args []string) {
	t.Helper()
	const wantLine = "receipt sent for SO-1001"
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	seen := make(chan bool, 1)
	go func() {
		found := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == wantLine && !found {
				found = true
				seen <- true
			}
		}
		if !found {
			seen <- false
		}
		exited <- cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case ok := <-seen:
		if !ok {
			<-exited
			t.Fatalf("%s exited without printing %q\nstderr:\n%s", strings.Join(args, " "), wantLine, stderr.String())
		}
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Fatalf("%s printed no %q within 60s\nstderr:\n%s", strings.Join(args, " "), wantLine, stderr.String())
	}
	program := childOf(t, cmd.Process.Pid)
	if err := syscall.Kill(program, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("%s after SIGINT: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		t.Fatalf("%s did not exit within 30s of SIGINT\nstderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	if !strings.Contains(stderr.String(), "runtime stopped") {
		t.Errorf("no \"runtime stopped\" log line: Stop did not run\nstderr:\n%s", stderr.String())
	}
}

// childOf returns the pid of the one process whose parent is pid, from /proc.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process has exited
		}
		// "pid (comm) state ppid …": comm may hold spaces, so read after the last ')'.
		end := bytes.LastIndexByte(b, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(string(b[end+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		child, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err == nil {
			children = append(children, child)
		}
	}
	if len(children) != 1 {
		t.Fatalf("go run (pid %d) has %d child processes %v, want 1 (the program)", pid, len(children), children)
	}
	return children[0]
}
