package failover

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestParseServerList: a list in the address becomes host:port entries (the
// default port added as for one server); one server, or a unix socket, is
// left as the driver parsed it; a malformed list is refused with an error
// that says what to write.
func TestParseServerList(t *testing.T) {
	for _, c := range []struct{ dsn, addr string }{
		{"u:pw@tcp(10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306)/app", "10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306"},
		{"u:pw@tcp(db1,db2:3307)/app?parseTime=true", "db1:3306,db2:3307"},
		{"u:pw@tcp([::1]:3306,::2,[fe80::1])/app", "[::1]:3306,[::2]:3306,[fe80::1]:3306"},
		{"u:p@ss,w(o)rd@tcp(a:1,b:2)/app", "a:1,b:2"}, // the password is not the address
		{"tcp(a:1,b:2)/app", "a:1,b:2"},
		{"u:pw@tcp(10.0.0.1:3306)/app", "10.0.0.1:3306"},
		{"u:pw@tcp(db1)/app", "db1:3306"},
		{"u:pw@unix(/run/my,sql.sock)/app", "/run/my,sql.sock"},
	} {
		mc, err := mysql.ParseDSN(c.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%s): %v", c.dsn, err)
		}
		if err := ParseServerList(mc, c.dsn); err != nil {
			t.Errorf("ParseServerList(%s): %v", c.dsn, err)
			continue
		}
		if mc.Addr != c.addr {
			t.Errorf("ParseServerList(%s): Addr %q, want %q", c.dsn, mc.Addr, c.addr)
		}
	}
	for _, c := range []struct{ dsn, says string }{
		{"u:pw@tcp(a:3306,,b:3306)/app", "empty entry (server 2)"},
		{"u:pw@tcp(a:3306,b:3306,)/app", "empty entry (server 3)"},
		{"u:pw@tcp(,a:3306)/app", "empty entry (server 1)"},
		{"u:pw@tcp(a:3306, b:3306)/app", `a space in " b:3306"`},
		{"u:pw@tcp(a:3306,b:x)/app", `"b:x" has no valid port`},
		{"u:pw@tcp(a:3306,b:0)/app", `"b:0" has no valid port`},
		{"u:pw@tcp(a:3306,b:)/app", `"b:" has no valid port`},
		{"u:pw@tcp(a:3306,:3306)/app", `":3306" is not host or host:port`},
		{"u:pw@tcp(a:3306,a)/app", "names a:3306 twice"},
	} {
		mc, err := mysql.ParseDSN(c.dsn)
		if err != nil {
			t.Fatalf("ParseDSN(%s): %v", c.dsn, err)
		}
		err = ParseServerList(mc, c.dsn)
		if err == nil {
			t.Errorf("ParseServerList(%s) accepted it (Addr %q)", c.dsn, mc.Addr)
			continue
		}
		for _, want := range []string{c.says, "tcp(10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseServerList(%s) = %q, want it to say %q", c.dsn, err, want)
			}
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("ParseServerList(%s) = %q shows the password", c.dsn, err)
		}
	}
}

// TestNewConnectorOneServer: one server gets the driver's own connector
// (everything as without failover); a list gets one connector per server.
func TestNewConnectorOneServer(t *testing.T) {
	mc, _ := mysql.ParseDSN("u:pw@tcp(db1:3306)/app")
	conn, err := NewConnector(mc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(*Connector); ok {
		t.Errorf("one server: got a failover connector, want the driver's")
	}
	dsn := "u:pw@tcp(db1:3306,db2:3306)/app"
	mc, _ = mysql.ParseDSN(dsn)
	if err := ParseServerList(mc, dsn); err != nil {
		t.Fatal(err)
	}
	conn, err = NewConnector(mc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := conn.(*Connector)
	if !ok {
		t.Fatalf("two servers: got %T, want *Connector", conn)
	}
	if got := strings.Join(fc.Servers(), ","); got != "db1:3306,db2:3306" {
		t.Errorf("Servers() = %s", got)
	}
	fc.Close()
}

// TestServerListTLSName: with tls=true the driver names the TLS server after
// the list taken as one address; ParseServerList clears that name so each
// server is verified under its own host, and keeps a name a registered TLS
// config sets.
func TestServerListTLSName(t *testing.T) {
	for _, dsn := range []string{
		"u:pw@tcp(db1:3306,db2:3306)/app?tls=true",
		"u:pw@tcp(db1:3306,db2)/app?tls=true",
		"u:pw@tcp(db1,db2)/app?tls=true",
	} {
		mc, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		before := mc.TLS.ServerName
		if err := ParseServerList(mc, dsn); err != nil {
			t.Fatal(err)
		}
		if mc.TLS.ServerName != "" {
			t.Errorf("%s: TLS server name %q (the driver's %q), want it left to each server", dsn, mc.TLS.ServerName, before)
		}
	}
	if err := mysql.RegisterTLSConfig("failover-test", &tls.Config{ServerName: "cluster.internal"}); err != nil {
		t.Fatal(err)
	}
	dsn := "u:pw@tcp(db1:3306,db2:3306)/app?tls=failover-test"
	mc, _ := mysql.ParseDSN(dsn)
	if err := ParseServerList(mc, dsn); err != nil {
		t.Fatal(err)
	}
	if mc.TLS.ServerName != "cluster.internal" {
		t.Errorf("registered TLS config's server name became %q", mc.TLS.ServerName)
	}
}
