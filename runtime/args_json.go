package runtime

import (
	"encoding"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The stored form of arguments (argo_task.task_parameter) is the JSON that
// encoding/json writes, byte for byte, for every value encoding/json can
// represent exactly. The encoder is the JSON v2 implementation run with
// the v1 options (same field names, omitempty, nil slices as null, sorted
// map keys, HTML escaping, MarshalJSON/MarshalText methods), plus two
// forms encoding/json lacks, so that no argument is altered on its way:
//
//   - a string (of any string type, at any depth) that is not valid UTF-8,
//     which encoding/json would store with U+FFFD in place of the bad bytes,
//     is stored as the object {"argo:invalid-utf8": "<its bytes, standard
//     base64>"};
//   - a float32 or float64 that is NaN, +Inf or -Inf, which encoding/json
//     refuses, is stored as the JSON string "NaN", "+Inf" or "-Inf".
//
// Both are read back only into the types they came from: a string-kinded
// value accepts the object, a float-kinded value the three strings. Types
// with their own MarshalJSON/MarshalText methods are left to them (output
// that is not valid UTF-8 refuses the call). What has no exact form
// refuses the call: a map key that is not valid UTF-8, and either of the
// two values inside an interface type (any), which would be read back as a
// map or a string.

// invalidUTF8Member names the only member of the object that stores a
// string that is not valid UTF-8.
const invalidUTF8Member = "argo:invalid-utf8"

var (
	encodeOptions = json.JoinOptions(
		jsonv1.DefaultOptionsV1(),
		jsontext.AllowInvalidUTF8(false), // what is not caught below is refused, never replaced
		json.WithMarshalers(json.MarshalToFunc(marshalExact)),
	)
	decodeOptions = json.JoinOptions(
		jsonv1.DefaultOptionsV1(),
		jsontext.AllowInvalidUTF8(false),
		json.RejectUnknownMembers(true), // a field the type lacks is an error at any depth
		json.WithUnmarshalers(json.UnmarshalFromFunc(unmarshalExact)),
	)
)

// encodeArgs encodes call arguments in their stored form.
func encodeArgs(v any) ([]byte, error) {
	return json.Marshal(v, encodeOptions)
}

// decodeArgs decodes a stored form into v (a pointer), refusing members
// that v's type lacks at any depth. The error names the place in data, as
// a JSON pointer (an *unstorableError), when it can be found.
func decodeArgs(data []byte, v any) error {
	err := json.Unmarshal(data, v, decodeOptions)
	if err == nil {
		return nil
	}
	// The v1 errors (kept: their semantics are v1's) do not say where;
	// decoding again with v2's errors into a fresh value finds the place.
	var se *json.SemanticError
	again := json.Unmarshal(data, reflect.New(reflect.TypeOf(v).Elem()).Interface(), decodeOptions, jsonv1.ReportErrorsWithLegacySemantics(false))
	if errors.As(again, &se) && se.JSONPointer != "" {
		return &unstorableError{at: se.JSONPointer, err: err}
	}
	return err
}

var (
	jsonMarshalerType   = reflect.TypeFor[jsonv1.Marshaler]()
	jsonMarshalerToType = reflect.TypeFor[json.MarshalerTo]()
	jsonMarshalerV2Type = reflect.TypeFor[json.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()

	jsonUnmarshalerType     = reflect.TypeFor[jsonv1.Unmarshaler]()
	jsonUnmarshalerFromType = reflect.TypeFor[json.UnmarshalerFrom]()
	jsonUnmarshalerV2Type   = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// ownsMarshal reports whether pointer type pt (pointer to the value being
// encoded) has a method of its own that encodes the value.
func ownsMarshal(pt reflect.Type) bool {
	return pt.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerToType) ||
		pt.Implements(jsonMarshalerV2Type) || pt.Implements(textMarshalerType)
}

// ownsUnmarshal is ownsMarshal for decoding.
func ownsUnmarshal(pt reflect.Type) bool {
	return pt.Implements(jsonUnmarshalerType) || pt.Implements(jsonUnmarshalerFromType) ||
		pt.Implements(jsonUnmarshalerV2Type) || pt.Implements(textUnmarshalerType)
}

// marshalExact writes the forms encoding/json lacks and leaves every other
// value (errors.ErrUnsupported) to the v1-compatible default. It is called
// with a pointer to each value.
func marshalExact(enc *jsontext.Encoder, p any) error {
	pv := reflect.ValueOf(p)
	if pv.Kind() != reflect.Pointer || pv.IsNil() {
		return errors.ErrUnsupported
	}
	v := pv.Elem()
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if utf8.ValidString(s) || ownsMarshal(pv.Type()) {
			return errors.ErrUnsupported
		}
		if atObjectName(enc) {
			return &unstorableError{at: enc.StackPointer(), err: fmt.Errorf("map key %q is not valid UTF-8: a map key has no exact stored form; use valid UTF-8 keys or a []byte value", s)}
		}
		if err := enc.WriteToken(jsontext.BeginObject); err != nil {
			return err
		}
		if err := enc.WriteToken(jsontext.String(invalidUTF8Member)); err != nil {
			return err
		}
		if err := enc.WriteToken(jsontext.String(base64.StdEncoding.EncodeToString([]byte(s)))); err != nil {
			return err
		}
		return enc.WriteToken(jsontext.EndObject)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if !math.IsNaN(f) && !math.IsInf(f, 0) || ownsMarshal(pv.Type()) {
			return errors.ErrUnsupported
		}
		return enc.WriteToken(jsontext.String(nonFiniteName(f)))
	case reflect.Interface:
		if v.IsNil() {
			return errors.ErrUnsupported
		}
		if what := inexactInside(v.Elem(), 0); what != "" {
			return &unstorableError{at: enc.StackPointer(), err: fmt.Errorf("%s inside an interface type: it would be read back as another type; use a concrete type", what)}
		}
	}
	return errors.ErrUnsupported
}

// inexactInside finds, in a value held by an interface (decoded as
// map[string]any, []any, string or float64 from the JSON alone), a string
// or float that needs one of the added forms, which only the value's own
// type reads back. It returns what it found, or "".
func inexactInside(v reflect.Value, depth int) string {
	if !v.IsValid() || depth > 1000 { // deeper: the encoder reports the cycle
		return ""
	}
	if ownsMarshal(reflect.PointerTo(v.Type())) {
		return ""
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return fmt.Sprintf("string %q, not valid UTF-8,", v.String())
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return "float " + nonFiniteName(f)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return inexactInside(v.Elem(), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "" // bytes: base64
		}
		for i := range v.Len() {
			if what := inexactInside(v.Index(i), depth+1); what != "" {
				return what
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if what := inexactInside(it.Value(), depth+1); what != "" {
				return what
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				if what := inexactInside(v.Field(i), depth+1); what != "" {
					return what
				}
			}
		}
	}
	return ""
}

// unstorableError is a value with no exact stored form, at a JSON pointer
// into the arguments.
type unstorableError struct {
	at  jsontext.Pointer
	err error
}

func (e *unstorableError) Error() string { return e.err.Error() }
func (e *unstorableError) Unwrap() error { return e.err }

// atObjectName reports whether enc's next token is an object member name
// (a map key).
func atObjectName(enc *jsontext.Encoder) bool {
	kind, n := enc.StackIndex(enc.StackDepth())
	return kind == '{' && n%2 == 0
}

func nonFiniteName(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "+Inf"
	default:
		return "-Inf"
	}
}

// unmarshalExact reads the forms marshalExact writes back into the types
// they came from, and leaves everything else to the v1-compatible default.
func unmarshalExact(dec *jsontext.Decoder, p any) error {
	pv := reflect.ValueOf(p)
	if pv.Kind() != reflect.Pointer || pv.IsNil() {
		return errors.ErrUnsupported
	}
	v := pv.Elem()
	switch v.Kind() {
	case reflect.String:
		if dec.PeekKind() != '{' || ownsUnmarshal(pv.Type()) {
			return errors.ErrUnsupported
		}
		s, err := readInvalidUTF8(dec)
		if err != nil {
			return err
		}
		v.SetString(s)
		return nil
	case reflect.Float32, reflect.Float64:
		if dec.PeekKind() != '"' || ownsUnmarshal(pv.Type()) {
			return errors.ErrUnsupported
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		f, err := parseFloatString(tok.String(), v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(f)
		return nil
	}
	return errors.ErrUnsupported
}

// readInvalidUTF8 reads {"argo:invalid-utf8": "<base64>"}.
func readInvalidUTF8(dec *jsontext.Decoder) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("a JSON object in place of a string must be {%q: \"<base64>\"}", invalidUTF8Member)
	}
	if tok, err := dec.ReadToken(); err != nil {
		return "", err
	} else if tok.Kind() != '{' {
		return bad()
	}
	name, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	if name.Kind() != '"' || name.String() != invalidUTF8Member || dec.PeekKind() != '"' {
		return bad()
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	val := tok.String() // a token is valid only until the next read
	if end, err := dec.ReadToken(); err != nil {
		return "", err
	} else if end.Kind() != '}' {
		return bad()
	}
	b, err := base64.StdEncoding.DecodeString(val)
	if err != nil {
		return "", fmt.Errorf("member %q: %w", invalidUTF8Member, err)
	}
	return string(b), nil
}

// parseFloatString reads a float stored as a JSON string: "NaN", "+Inf" or
// "-Inf", or a JSON number in quotes (the form of a ",string" field).
func parseFloatString(s string, bits int) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	if v := jsontext.Value(s); !v.IsValid() || v.Kind() != '0' || strings.TrimSpace(s) != s {
		return 0, fmt.Errorf("cannot decode string %q as a float: want a JSON number, \"NaN\", \"+Inf\" or \"-Inf\"", s)
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		return 0, fmt.Errorf("cannot decode %s as a float%d: %w", s, bits, err)
	}
	return f, nil
}
