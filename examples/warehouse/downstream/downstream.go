// Package downstream runs the untrusted systems a warehouse talks to, as
// small HTTP servers on loopback: vehicle dispatch, peripheral lights, label
// printing and the upstream ERP. Each fails a configurable share of calls.
// Whether a call fails is drawn from a hash of (seed, endpoint, idempotency
// key), so a run with the same seed fails the same attempts whatever the
// timing: runs are reproducible.
package downstream

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Systems is the set of running fake systems.
type Systems struct {
	Dispatch, Lights, Printer, Upstream string // base URLs

	seed     uint64
	failRate float64
	servers  []*http.Server

	mu    sync.Mutex
	calls map[string]int // endpoint → calls served (failures included)
}

// Start starts the four systems on 127.0.0.1, each failing failRate of calls.
func Start(seed uint64, failRate float64) (*Systems, error) {
	s := &Systems{seed: seed, failRate: failRate, calls: map[string]int{}}
	urls := make([]string, 4)
	for i, name := range []string{"dispatch", "lights", "printer", "upstream"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("downstream %s: %w", name, err)
		}
		srv := &http.Server{Handler: s.handler(name), ReadHeaderTimeout: 5 * time.Second}
		s.servers = append(s.servers, srv)
		go srv.Serve(ln)
		urls[i] = "http://" + ln.Addr().String()
	}
	s.Dispatch, s.Lights, s.Printer, s.Upstream = urls[0], urls[1], urls[2], urls[3]
	return s, nil
}

// Close stops the servers.
func (s *Systems) Close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

// Calls returns how many calls each endpoint served.
func (s *Systems) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

func (s *Systems) handler(system string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoint := system + r.URL.Path
		s.mu.Lock()
		s.calls[endpoint]++
		s.mu.Unlock()
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
			return
		}
		// The printer knows no "XL" label template: a permanent error.
		if system == "printer" && body["template"] == "XL" {
			http.Error(w, "unknown label template XL", http.StatusBadRequest)
			return
		}
		if s.fails(endpoint, r.Header.Get("Idempotency-Key")) {
			if strings.HasSuffix(endpoint, "/depart") {
				time.Sleep(20 * time.Millisecond)
			}
			http.Error(w, system+" is having a bad day", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"system":%q}`, system)
	})
}

// fails decides, reproducibly, whether this call fails.
func (s *Systems) fails(endpoint, key string) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%s", s.seed, endpoint, key)
	return float64(h.Sum64()%10000)/10000 < s.failRate
}
