package console_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
)

// TestVendoredAssets: the chart library the console serves (embedded in
// the binary) is byte for byte what assets/vendor/VERSIONS records, every
// vendored file is listed there, and no build tree came along.
func TestVendoredAssets(t *testing.T) {
	f, err := os.Open("assets/vendor/VERSIONS")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	var libs []string
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		fields := strings.Fields(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case len(fields) == 2 && len(fields[0]) == 64:
			sums[fields[1]] = fields[0]
		case len(fields) == 3:
			libs = append(libs, line) // name version licence
		default:
			t.Fatalf("VERSIONS: cannot read line %q", line)
		}
	}
	if len(libs) == 0 || len(sums) == 0 {
		t.Fatalf("VERSIONS names no library (%d) or no file (%d)", len(libs), len(sums))
	}

	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{})
	for path, want := range sums {
		r := do(t, h, "GET", "/assets/vendor/"+path, "", nil)
		if r.status != 200 {
			t.Fatalf("GET /assets/vendor/%s: %d", path, r.status)
		}
		sum := sha256.Sum256([]byte(r.body))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("the embedded %s has sha256 %s, VERSIONS says %s: refresh the file or VERSIONS (its header says how)", path, got, want)
		}
	}
	err = filepath.WalkDir("assets/vendor", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("assets/vendor", p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "node_modules" {
				t.Errorf("%s: no node_modules in the repository (copy only the dist files)", p)
			}
			return nil
		}
		if rel != "VERSIONS" && sums[rel] == "" {
			t.Errorf("vendored file %s is not listed in VERSIONS", rel)
		}
		if strings.HasPrefix(d.Name(), "package") {
			t.Errorf("%s: no package manifests or lock files in the repository", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
