package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file is the support the code argogen generates calls into, so that
// each generated file holds only what differs per task. It is not meant to
// be called by hand.

// encodeCall encodes args as a call of def through rt, or says why the call
// cannot be stored. register names the generated function that binds rt.
func encodeCall(rt *Runtime, register string, def *TaskDef, args any, shardBy, uniqueKey string) (Call, error) {
	if rt == nil {
		return Call{}, fmt.Errorf("%w: task %s: no runtime is bound: call %s at start-up", ErrNotPersisted, def.Name, register)
	}
	b, err := encodeArgs(args)
	if err != nil {
		return Call{}, fmt.Errorf("%w: task %s: encoding %s: %w", ErrNotPersisted, def.Name, argumentAt(err), err)
	}
	return Call{Task: def, Args: b, ShardBy: shardBy, UniqueKey: uniqueKey}, nil
}

// SubmitJSON stores a call of def with args encoded as JSON and runs it per
// def (Runtime.Submit). rt is the runtime the generated Register function
// bound, nil if none was; register names that function for the error.
func SubmitJSON(ctx context.Context, rt *Runtime, register string, def *TaskDef, args any, shardBy, uniqueKey string) error {
	call, err := encodeCall(rt, register, def, args, shardBy, uniqueKey)
	if err != nil {
		return err
	}
	_, err = rt.Submit(ctx, call)
	return err
}

// SubmitJSONTx is SubmitJSON inside the caller's transaction (Runtime.SubmitTx).
func SubmitJSONTx(ctx context.Context, rt *Runtime, tx Execer, register string, def *TaskDef, args any, shardBy, uniqueKey string) (int64, error) {
	call, err := encodeCall(rt, register, def, args, shardBy, uniqueKey)
	if err != nil {
		return 0, err
	}
	return rt.SubmitTx(ctx, tx, call)
}

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
