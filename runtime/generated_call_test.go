package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestGeneratedCallRefusesWhatItCannotStore: a GeneratedCall without a Task
// or without a Runtime is refused with an error wrapping ErrNotPersisted
// that says what is missing (the generated Register function to call, for a
// missing Runtime), never a panic.
func TestGeneratedCallRefusesWhatItCannotStore(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call GeneratedCall
		want string
	}{
		{"no task", GeneratedCall{Runtime: &Runtime{}, Register: "p.ArgoRegister", Args: struct{}{}}, "GeneratedCall.Task is nil"},
		{"no runtime", GeneratedCall{Register: "p.ArgoRegister", Task: &TaskDef{Name: "p.F"}, Args: struct{}{}},
			"task p.F: no runtime is bound: call p.ArgoRegister at start-up"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, err := c.call.Submit(ctx)
			if id != 0 || !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Submit: %d, %v; want 0 and an error wrapping ErrNotPersisted that says %q", id, err, c.want)
			}
		})
	}
}
