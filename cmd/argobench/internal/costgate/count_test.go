package costgate

import (
	"net"
	"reflect"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	got := splitStatements("START TRANSACTION; UPDATE t SET a = 'x;y' WHERE b = \"c;\" AND d = 'it''s;'; COMMIT")
	want := []string{"START TRANSACTION", "UPDATE t SET a = 'x;y' WHERE b = \"c;\" AND d = 'it''s;'", "COMMIT"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitStatements = %q, want %q", got, want)
	}
	if got := splitStatements(`SELECT 'a\';b'`); len(got) != 1 {
		t.Errorf("backslash-escaped quote split: %q", got)
	}
}

// packet returns one client packet (3-byte length, sequence, payload).
func packet(seq byte, payload ...byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// TestWireCounts: a multi-statement query is one trip holding its
// statements; a write outside a transaction is a commit; SET NAMES at
// connect, COM_STMT_CLOSE and packets after the first of a command (the
// handshake's) count as nothing.
func TestWireCounts(t *testing.T) {
	c := NewCounter()
	client, server := net.Pipe()
	defer server.Close()
	go func() { // drain
		buf := make([]byte, 4096)
		for {
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	w := &wireConn{Conn: client, s: &session{c: c}}
	query := func(q string) []byte { return packet(0, append([]byte{comQuery}, q...)...) }
	var stream []byte
	stream = append(stream, packet(1, 0x85, 0xa6)...) // handshake response
	stream = append(stream, query("SET NAMES utf8mb4")...)
	stream = append(stream, query("INSERT INTO argo_task (a) VALUES (1)")...)
	stream = append(stream, query("START TRANSACTION; UPDATE argo_task SET a = 2 WHERE id = 1; UPDATE argo_task_dep SET b = 1; COMMIT")...)
	stream = append(stream, query("SELECT id FROM argo_task")...)
	stream = append(stream, packet(0, comStmtClose, 1, 0, 0, 0)...)
	// Written in two pieces split mid-packet: the counter reassembles.
	for _, part := range [][]byte{stream[:7], stream[7:]} {
		if _, err := w.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Snapshot()
	if got.Statements != 4 || got.Trips != 3 || got.Commits != 2 {
		t.Errorf("statements/trips/commits = %d/%d/%d, want 4/3/2 (kinds %v)", got.Statements, got.Trips, got.Commits, got.Kinds)
	}
	if got.Kinds["UPDATE argo_task_dep"] != 1 || got.Kinds["SET (connection)"] != 1 {
		t.Errorf("kinds = %v", got.Kinds)
	}
}
