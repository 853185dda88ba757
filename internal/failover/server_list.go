package failover

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// defaultPort is the port of a listed server written without one, as the
// driver adds it for a single server.
const defaultPort = "3306"

// listExample is what the error for a malformed server list tells to write.
const listExample = "write the servers in the address separated by commas, each host or host:port, with no spaces and none twice: tcp(10.0.0.1:3306,10.0.0.2:3306,10.0.0.3:3306)"

// ParseServerList reads the server list of a go-sql-driver DSN (without
// argo's "mysql:" prefix) that mysql.ParseDSN parsed into mc, and stores it
// in mc.Addr as host:port entries joined by commas (NewConnector splits them
// again). A DSN whose address names one server, or whose network is not TCP
// (a unix socket path may hold a comma), leaves mc unchanged.
//
// The driver accepts a comma-separated address but reads it as one host
// (adding :3306 to the whole list), so the list is taken from the DSN's text
// as written, the way the driver finds the address: between the '(' after
// the last '@' before the last '/' and the ')' just before that '/'.
//
// A malformed list (an empty entry, a space, an entry that is not host or
// host:port, a server named twice) is refused with an error that quotes the
// address (never the password) and says what to write.
func ParseServerList(mc *mysql.Config, dsn string) error {
	if !strings.HasPrefix(mc.Net, "tcp") {
		return nil
	}
	written, ok := writtenAddress(dsn)
	if !ok || !strings.Contains(written, ",") {
		return nil
	}
	servers, err := splitServerList(written)
	if err != nil {
		return err
	}
	if mc.TLS != nil {
		// The driver named the TLS server after the whole list taken as one
		// address (or after part of it): have it name each server after its
		// own host (NewConnector). A name set by a registered TLS config is
		// kept.
		if host, _, err := net.SplitHostPort(mc.Addr); err == nil && mc.TLS.ServerName == host {
			mc.TLS = mc.TLS.Clone()
			mc.TLS.ServerName = ""
		}
	}
	mc.Addr = strings.Join(servers, ",")
	return nil
}

// splitServerList checks a written list of servers and returns each as
// host:port.
func splitServerList(written string) ([]string, error) {
	var servers []string
	seen := map[string]bool{}
	for i, entry := range strings.Split(written, ",") {
		switch {
		case entry == "":
			return nil, fmt.Errorf("the server list %q has an empty entry (server %d): %s", written, i+1, listExample)
		case strings.ContainsAny(entry, " \t\r\n"):
			return nil, fmt.Errorf("the server list %q has a space in %q: %s", written, entry, listExample)
		}
		addr, err := serverAddress(entry)
		if err != nil {
			return nil, fmt.Errorf("the server list %q: %q %s: %s", written, entry, err, listExample)
		}
		if seen[addr] {
			return nil, fmt.Errorf("the server list %q names %s twice: %s", written, addr, listExample)
		}
		seen[addr] = true
		servers = append(servers, addr)
	}
	return servers, nil
}

// serverAddress returns entry as host:port, adding the default port as the
// driver does for a single server.
func serverAddress(entry string) (string, error) {
	addr := entry
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(strings.Trim(addr, "[]"), defaultPort)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || strings.ContainsAny(host, "[]()/@?") {
		return "", fmt.Errorf("is not host or host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("has no valid port (1 to 65535)")
	}
	return addr, nil
}

// writtenAddress returns the address of a driver DSN as written (the text
// between the parentheses after the network), found as mysql.ParseDSN finds
// it; ok is false when the DSN has none.
func writtenAddress(dsn string) (addr string, ok bool) {
	slash := strings.LastIndex(dsn, "/")
	if slash <= 0 {
		return "", false
	}
	at := strings.LastIndex(dsn[:slash], "@") // -1 when there is no user part
	open := strings.Index(dsn[at+1:slash], "(")
	if open < 0 || dsn[slash-1] != ')' {
		return "", false
	}
	return dsn[at+1+open+1 : slash-1], true
}

// serverAddresses splits the Addr of a config ParseServerList filled (one
// address when it holds no list).
func serverAddresses(mc *mysql.Config) []string {
	if !strings.HasPrefix(mc.Net, "tcp") {
		return []string{mc.Addr}
	}
	return strings.Split(mc.Addr, ",")
}
