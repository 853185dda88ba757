package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata and the generated file of gen/e2e")

// TestGolden generates each testdata/<case>/input package and compares the
// result with testdata/<case>/argo_gen.go.golden (then compiles and vets the
// package with it) or, for packages with user errors, with
// testdata/<case>/errors.golden.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/input")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no test cases: %v", err)
	}
	for _, input := range cases {
		dir := filepath.Dir(input)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			abs, _ := filepath.Abs(input)
			res, err := Generate(Options{Dir: input})
			var list ErrorList
			switch {
			case errors.As(err, &list):
				golden(t, filepath.Join(dir, "errors.golden"), []byte(list.Format(abs)+"\n"))
				mustNotExist(t, filepath.Join(dir, "argo_gen.go.golden"))
			case err != nil:
				t.Fatal(err)
			default:
				golden(t, filepath.Join(dir, "argo_gen.go.golden"), res.Source)
				mustNotExist(t, filepath.Join(dir, "errors.golden"))
				if len(res.Warnings) > 0 {
					golden(t, filepath.Join(dir, "warnings.golden"), []byte(res.Warnings.Format(abs)+"\n"))
				} else {
					mustNotExist(t, filepath.Join(dir, "warnings.golden"))
				}
				vetWith(t, input, res)
			}
		})
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./gen -update and review the diff):\n%s", path, diff(string(want), string(got)))
	}
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		if *update {
			os.Remove(path)
			return
		}
		t.Errorf("%s exists but this case produced the other kind of output", path)
	}
}

// vetWith runs go vet on the input package with the generated file in place
// (through an overlay: nothing is written into testdata).
func vetWith(t *testing.T, input string, res *Result) {
	t.Helper()
	tmp := t.TempDir()
	src := filepath.Join(tmp, "argo_gen.go")
	if err := os.WriteFile(src, res.Source, 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{res.Path: src}})
	ov := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "-overlay", ov, "./"+filepath.ToSlash(input)+"/...")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet with the generated file: %v\n%s", err, out)
	}
}

// diff returns the first differing lines of want and got.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n- " + a + "\n+ " + b
		}
	}
	return "(same lines, different bytes)"
}

// TestE2EUpToDate checks that gen/e2e/argo_gen.go, which the end-to-end test
// compiles and runs, is what argogen generates now (-update rewrites it).
func TestE2EUpToDate(t *testing.T) {
	res, err := Generate(Options{Dir: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := res.Write(); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, res.Source) {
		t.Errorf("gen/e2e/argo_gen.go is stale (run go test ./gen -update or go generate ./gen/e2e):\n%s", diff(string(old), string(res.Source)))
	}
}
