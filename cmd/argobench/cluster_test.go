package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestWriterDSNs: each runtime of the all-writers setup is given every
// server, its own first and the others in the list's order, and
// argoMultiWriter=true.
func TestWriterDSNs(t *testing.T) {
	dsn := "mysql:u:secret@tcp(10.0.0.1:3306,10.0.0.2:3307,10.0.0.3:3308)/bench?timeout=5s"
	servers, cfg, err := serverList(dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"10.0.0.1:3306", "10.0.0.2:3307", "10.0.0.3:3308"},
		{"10.0.0.2:3307", "10.0.0.3:3308", "10.0.0.1:3306"},
		{"10.0.0.3:3308", "10.0.0.1:3306", "10.0.0.2:3307"},
	}
	got := writerDSNs(cfg, servers)
	if len(got) != len(want) {
		t.Fatalf("%d writer DSNs, want %d: %q", len(got), len(want), got)
	}
	for i, d := range got {
		list, c, err := serverList(d)
		if err != nil {
			t.Fatalf("writer DSN %d %q does not parse: %v", i+1, d, err)
		}
		if !slices.Equal(list, want[i]) {
			t.Errorf("writer %d lists %v, want %v", i+1, list, want[i])
		}
		if c.Params["argoMultiWriter"] != "true" {
			t.Errorf("writer %d lacks argoMultiWriter=true (every runtime would write through the one elected node): %q", i+1, d)
		}
		if c.User != "u" || c.Passwd != "secret" || c.DBName != "bench" || c.Timeout.String() != "5s" {
			t.Errorf("writer %d lost the DSN's other settings: %q", i+1, d)
		}
	}
}

// TestNamesSeveralServers decides whether the default run includes the
// cluster workload.
func TestNamesSeveralServers(t *testing.T) {
	for dsn, want := range map[string]bool{
		"mysql:root@tcp(h1:1,h2:2)/db":  true,
		"mysql:root@tcp(h1:1)/db":       false,
		"sqlite:/tmp/x.db":              false,
		"":                              false,
		"mysql:root@tcp(h1:1,,h2:2)/db": false, // malformed: the bench's setup reports it
	} {
		if got := namesSeveralServers(dsn); got != want {
			t.Errorf("namesSeveralServers(%q) = %v, want %v", dsn, got, want)
		}
	}
}

// TestClusterNeedsServerList: asked for on one server, the cluster
// workload fails saying what DSN it needs.
func TestClusterNeedsServerList(t *testing.T) {
	var out, log bytes.Buffer
	code := run([]string{"-only", "cluster", "-runs", "1", "-scale", "0.001"}, &out, &log)
	if code != 1 || !strings.Contains(log.String(), "needs a -dsn naming several servers") {
		t.Fatalf("exit %d, want 1 with the refusal\nstderr:\n%s", code, log.String())
	}
}

// TestClusterAttemptsCheck: a (task, attempt) run twice or a task that
// never ran fails the run; an attempt beyond the expected ones (a rescue)
// is counted, not refused.
func TestClusterAttemptsCheck(t *testing.T) {
	l := newClusterAttempts(3)
	l.add(11, 1, 1)
	l.add(12, 1, clusterFailEvery) // fails once, then
	l.add(12, 2, clusterFailEvery) // succeeds
	l.add(13, 1, 2)
	if extra, err := l.check(3); err != nil || extra != 0 {
		t.Fatalf("clean run: extra %d, err %v", extra, err)
	}
	l.add(13, 2, 2) // rescued: a second attempt of a task that does not fail
	if extra, err := l.check(3); err != nil || extra != 1 {
		t.Fatalf("rescued attempt: extra %d, err %v; want 1 and no error", extra, err)
	}
	if _, err := l.check(4); err == nil {
		t.Error("a task that never ran was not reported")
	}
	l.add(11, 1, 1)
	if _, err := l.check(3); err == nil {
		t.Error("an attempt run twice was not reported")
	}
}

// TestClusterGalera runs the cluster workload at a tiny scale on the test
// cluster (ARGO_TEST_GALERA_DSNS) with the MariaDB server as the baseline:
// every setup is reported, and the writes went where each setup says — the
// one writer's through one server (the one the failover connector elects),
// each all-writers runtime's through its own.
func TestClusterGalera(t *testing.T) {
	g := testdb.GaleraCluster(t) // holds the cluster lock (shared) until the test ends
	clusterDSN := g.NewDatabase(t).FailoverDSN(1)
	single := testdb.MySQLDSN(t)
	const tasks = 60
	var out, log bytes.Buffer
	code := run([]string{"-dsn", clusterDSN, "-single-dsn", single, "-only", "cluster", "-runs", "1",
		"-scale", "0.006", "-workers", "6", "-submitters", "3", "-o", "json"}, &out, &log)
	if code != 0 {
		t.Fatalf("argobench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), log.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not a JSON report: %v\n%s", err, out.String())
	}
	metrics := map[string]*Row{}
	for _, r := range rep.Rows {
		if r.Workload == clusterWorkload {
			metrics[r.Metric] = r
		}
	}
	for _, prefix := range []string{"tasks/s, one server", "tasks/s, cluster, one writer", "tasks/s, cluster, all writers",
		"throughput, one writer / one server", "throughput, all writers / one server", "throughput, all writers / one writer",
		"one writer: brute-force aborts", "one writer: certification failures", "all writers: brute-force aborts", "all writers: certification failures",
		"failed submits per 10,000 tasks, one server", "failed submits per 10,000 tasks, one writer", "failed submits per 10,000 tasks, all writers"} {
		found := false
		for m, r := range metrics {
			if strings.HasPrefix(m, prefix) {
				found = true
				if r.Argo == nil || len(r.Argo.Runs) != 1 {
					t.Errorf("%s: no figure for the run: %+v", m, r.Argo)
				}
			}
		}
		if !found {
			t.Errorf("no %q row in the report", prefix)
		}
	}

	// Where the writes went. wsrep_local_commits counts every client of a
	// server (other tests may share the cluster), so these are lower
	// bounds: each submit is one commit through its runtime's server.
	setups := map[string]*ClusterSetupReport{}
	for _, s := range rep.Cluster {
		setups[s.Setup] = s
	}
	one, all := setups["one"], setups["all"]
	if one == nil || all == nil || setups["single"] == nil {
		t.Fatalf("setups reported: %+v", rep.Cluster)
	}
	if len(one.DSNs) != 1 || len(all.DSNs) != g.Nodes() || len(all.LocalCommits) != g.Nodes() {
		t.Fatalf("one writer has %d runtimes, all writers %d (want 1 and %d), commits of %d servers", len(one.DSNs), len(all.DSNs), g.Nodes(), len(all.LocalCommits))
	}
	if slices.Max(one.LocalCommits) < tasks {
		t.Errorf("one writer: no server committed as many transactions as the %d submits: %v", tasks, one.LocalCommits)
	}
	for i, c := range all.LocalCommits {
		if c < tasks/int64(g.Nodes()) {
			t.Errorf("all writers: server %s committed %d transactions, fewer than its runtime's %d submits: %v", all.Servers[i], c, tasks/g.Nodes(), all.LocalCommits)
		}
	}
}
