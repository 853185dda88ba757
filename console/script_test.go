package console_test

import (
	"os"
	"strings"
	"testing"
)

// TestScriptWritesTextOnly: the console's own script puts data into the
// page with textContent and attribute setters only, never as HTML.
func TestScriptWritesTextOnly(t *testing.T) {
	js, err := os.ReadFile("assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "javascript:"} {
		if strings.Contains(string(js), banned) {
			t.Errorf("assets/console.js uses %s: put data into the page with textContent", banned)
		}
	}
}
