package gen

import (
	"strings"
	"testing"
)

// TestNearMiss: each kind of near-miss gets its warning, naming what to
// write; directives and ordinary comments get none.
func TestNearMiss(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // a substring of the warning; "" = no warning
	}{
		{"// argo:retry", "no space after //"},
		{"// argo:retry retries=3", "no space after //"},
		{"//\targo:retry", "no space after //"},
		{"//argo:Retry", "directives are lower case"},
		{"//Argo:retry retries=1", "directives are lower case"},
		{"//ARGO:RETRY", "directives are lower case"},
		{"//agro:retry", "did you mean //argo:retry?"},
		{"//arg:retry x=1", "did you mean //argo:retry?"},
		{"// argo:retyr", "no space after //"},
		{"//argo: retry", "with no space inside"},
		{"/* argo:retry */", "block comment"},
		{"/*argo:retry retries=2*/", "block comment"},

		{"//argo:retry", ""},                 // the directive: the checker's
		{"//argo:retries", ""},               // //argo:NAME: the checker's
		{"//go:generate argogen", ""},        // another tool's directive
		{"// //argo:retry reads", ""},        // prose quoting the directive
		{"// argo:retry, the directive", ""}, // prose
		{"// argo:retry.", ""},               // prose
		{"// argo is durable", ""},           // prose
		{"// retry: later", ""},              // prose
		{"//lint:ignore X", ""},              // another tool
		{"/* a block comment */", ""},        // prose
		{"//", ""},
	} {
		got := nearMiss(tc.text)
		switch {
		case tc.want == "" && got != "":
			t.Errorf("nearMiss(%q) = %q, want no warning", tc.text, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("nearMiss(%q) = %q, want a warning with %q", tc.text, got, tc.want)
		case tc.want != "" && !strings.Contains(got, "//argo:retry"):
			t.Errorf("nearMiss(%q) = %q: does not say what to write", tc.text, got)
		}
	}
}
