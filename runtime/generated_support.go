package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file and generated_call.go are the support the code argogen
// generates calls into, so that each generated file holds only what differs
// per task. They are not meant to be called by hand.

// DecodeJSON decodes stored arguments into v. The stored keys must be
// exactly keys, and every member of a stored struct, at any depth, a field
// of v's type: a row written for another signature of the function (or of
// a parameter's type: a field renamed since) is refused with Undecodable
// (it waits, visible, for a deploy that decodes it), never run with zero
// values. The stored form is encodeArgs's (args_json.go).
func DecodeJSON(args []byte, v any, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return Undecodable(err)
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return Undecodable(fmt.Errorf("argument %q is missing", k))
		}
	}
	for k := range m {
		if !slices.Contains(keys, k) {
			return Undecodable(fmt.Errorf("argument %q is not a parameter", k))
		}
	}
	if err := decodeArgs(args, v); err != nil {
		return Undecodable(fmt.Errorf("%s: %w", argumentAt(err), err))
	}
	return nil
}

// argumentAt names the argument (and where inside it) an encoding or
// decoding error is about, from its JSON pointer: `argument "order" at
// /order/attrs`, or "the arguments" when the place is unknown.
func argumentAt(err error) string {
	var at jsontext.Pointer
	var ue *unstorableError
	var se *jsonv2.SemanticError
	switch {
	case errors.As(err, &ue):
		at = ue.at
	case errors.As(err, &se):
		at = se.JSONPointer
	}
	if at == "" {
		return "the arguments"
	}
	for name := range at.Tokens() {
		return fmt.Sprintf("argument %q at %s", name, at)
	}
	return "the arguments"
}
