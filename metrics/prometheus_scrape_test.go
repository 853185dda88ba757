package metrics_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// prometheusServer starts a real Prometheus (Debian's prometheus package)
// scraping target (host:port) every second, and returns its address. Without
// the binary the test says how to get it and is skipped, except under CI
// (CI=true), where it fails.
func prometheusServer(t *testing.T, target string) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err != nil {
		msg := "prometheus not found: install it (Debian: sudo apt-get install prometheus) or run make test as root, which installs it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: argo\n    static_configs:\n      - targets: [%q]\n", target)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=error")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return addr
}

// promQuery evaluates an instant query on the Prometheus at addr until it
// returns one sample (the scrape has landed) and returns its value.
func promQuery(t *testing.T, addr, query string) float64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, ok, err := promQueryOnce(addr, query)
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus query %s: no sample within 60s (last error %v)", query, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func promQueryOnce(addr, query string) (float64, bool, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, false, err
	}
	if r.Status != "success" {
		return 0, false, fmt.Errorf("%s: %s", r.Status, r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, false, fmt.Errorf("%d samples", len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

// docQueries returns the PromQL queries of docs/backlog.md's KEDA example
// (its "query:" lines).
func docQueries(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/backlog.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s+query: (.+)$`).FindAllStringSubmatch(string(doc), -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	if len(out) != 2 {
		t.Fatalf("docs/backlog.md has %d KEDA queries; want 2 (due tasks, oldest due age): %q", len(out), out)
	}
	return out
}
