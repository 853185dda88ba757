package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// argsCorpusText has a MarshalText method: its own encoding wins.
type argsCorpusText string

func (t argsCorpusText) MarshalText() ([]byte, error) { return []byte("text:" + string(t)), nil }

// argsCorpusJSON has a MarshalJSON method with unsorted, spaced output.
type argsCorpusJSON struct{ N int }

func (j argsCorpusJSON) MarshalJSON() ([]byte, error) { return []byte(`{ "b" : 1, "a" : "<&>" }`), nil }

type argsCorpusEmbedded struct {
	Inner  string `json:"inner"`
	hidden int
}

type argsCorpusStruct struct {
	argsCorpusEmbedded
	Name      string            `json:"name"`
	Omitted   string            `json:"omitted,omitempty"`
	Empty     []int             `json:"empty,omitempty"`
	NilSlice  []string          `json:"nil_slice"`
	NilMap    map[string]int    `json:"nil_map"`
	EmptyMap  map[string]int    `json:"empty_map"`
	Map       map[string]string `json:"map"`
	IntKeys   map[int]bool      `json:"int_keys"`
	TextKeys  map[argsCorpusText]int
	Bytes     []byte `json:"bytes"`
	NilBytes  []byte
	Array     [3]byte
	Ptr       *float64 `json:"ptr"`
	NilPtr    *string  `json:"nil_ptr"`
	Stringed  int64    `json:"stringed,string"`
	StrFloat  float64  `json:",string"`
	Time      time.Time
	Duration  time.Duration
	Raw       json.RawMessage
	Custom    argsCorpusJSON
	Text      argsCorpusText
	Any       any
	Ignored   string `json:"-"`
	Dash      string `json:"-,"`
	NoTag     uint8
	F32       float32
	Big       float64
	Tiny      float64
	NegZero   float64
	Unicode   string
	Interface error
}

// TestEncodeArgsMatchesEncodingJSON: every value encoding/json represents
// exactly is stored byte for byte as encoding/json writes it, so rows
// written before the exact encoder are read back unchanged and the stored
// JSON stays what operators know.
func TestEncodeArgsMatchesEncodingJSON(t *testing.T) {
	f := 1.5
	corpus := []any{
		nil, true, 0, -7, uint64(math.MaxUint64), 3.14, float32(0.1), 1e21, 1e-7, 123456789.0,
		"", "plain", "<html> & 'quotes' \"dq\" \\ \u2028 \u2029 \x00 \x1f \t\n é 日本 🎉 \ufffd",
		[]int(nil), []int{}, []string{"b", "a"}, map[string]int{"z": 1, "a": 2, "<k>": 3, "é": 4},
		map[int64]string{10: "x", -2: "y", 3: "z"}, [2]bool{true}, &f, (*int)(nil),
		argsCorpusStruct{
			argsCorpusEmbedded: argsCorpusEmbedded{Inner: "in", hidden: 1},
			Name:               "n", NilMap: nil, EmptyMap: map[string]int{},
			Map: map[string]string{"b": "2", "a": "1"}, IntKeys: map[int]bool{2: true, 1: false},
			TextKeys: map[argsCorpusText]int{"q": 1}, Bytes: []byte{0, 1, 2, 250}, Array: [3]byte{1, 2, 3},
			Ptr: &f, Stringed: 42, StrFloat: 2.5, Time: time.Date(2026, 11, 22, 16, 0, 0, 123, time.FixedZone("x", 3600)),
			Duration: time.Second, Raw: json.RawMessage(`{"z" : [1, 2]}`), Custom: argsCorpusJSON{N: 1},
			Text: "t", Any: map[string]any{"k": []any{1.0, "s", nil}}, Ignored: "no", Dash: "dash",
			NoTag: 255, F32: 3.4028235e38, Big: 1.7976931348623157e308, Tiny: 5e-324, NegZero: math.Copysign(0, -1),
			Unicode: "ünïcödé \u00e9", Interface: errors.New("opaque"),
		},
		struct {
			A int `json:"a,omitempty"`
			B string
		}{B: "b"},
	}
	for i, v := range corpus {
		want, werr := json.Marshal(v)
		got, gerr := encodeArgs(v)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("corpus[%d] %T: encoding/json error %v, encodeArgs error %v", i, v, werr, gerr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("corpus[%d] %T:\n encodeArgs    %s\n encoding/json %s", i, v, got, want)
		}
	}
}

// exactArgs has every shape that encoding/json alters or refuses, at depth.
type exactArgs struct {
	Text   string             `json:"text"`
	Name   argsCorpusName     `json:"name"`
	F64    float64            `json:"f64"`
	F32    float32            `json:"f32"`
	Nested exactNested        `json:"nested"`
	Floats []float64          `json:"floats"`
	F32s   map[string]float32 `json:"f32s"`
	Texts  map[string]string  `json:"texts"`
	PText  *string            `json:"ptext"`
	PF64   *float64           `json:"pf64"`
	Arr    [2]string          `json:"arr"`
}

type argsCorpusName string

type exactNested struct {
	Label string    `json:"label"`
	Deep  []*string `json:"deep"`
	Value float64   `json:"value"`
}

// TestEncodeArgsRoundTripsExactly: strings with invalid UTF-8 and NaN/±Inf
// floats come back bit for bit, at any depth.
func TestEncodeArgsRoundTripsExactly(t *testing.T) {
	bad := "a\xffb\xc3(\xed\xa0\x80z"
	alsoBad := "\x80"
	nan, inf := math.NaN(), math.Inf(1)
	in := exactArgs{
		Text: bad, Name: argsCorpusName(alsoBad), F64: nan, F32: float32(math.Inf(-1)),
		Nested: exactNested{Label: bad + " nested", Deep: []*string{&alsoBad, nil}, Value: math.Inf(-1)},
		Floats: []float64{1, nan, inf, math.Inf(-1), 0.5}, F32s: map[string]float32{"n": float32(nan), "i": float32(inf), "x": 2},
		Texts: map[string]string{"k": bad, "ok": "fine"}, PText: &bad, PF64: &inf, Arr: [2]string{"ok", alsoBad},
	}
	b, err := encodeArgs(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"f64":"NaN"`) || !strings.Contains(string(b), `"f32":"-Inf"`) || !strings.Contains(string(b), `{"argo:invalid-utf8":`) {
		t.Errorf("stored form %s: want NaN/-Inf as strings and invalid UTF-8 as tagged objects", b)
	}
	var out exactArgs
	if err := decodeArgs(b, &out); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	if !sameBits(reflect.ValueOf(in), reflect.ValueOf(out)) {
		t.Errorf("round trip altered the arguments:\n in  %#v\n out %#v\n via %s", in, out, b)
	}
}

// sameBits compares like reflect.DeepEqual, but floats by their bits (NaN
// equals NaN, 0 differs from -0).
func sameBits(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32:
		return math.Float32bits(float32(a.Float())) == math.Float32bits(float32(b.Float()))
	case reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.String:
		return a.String() == b.String()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameBits(a.Elem(), b.Elem())
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() || a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return false
		}
		for i := range a.Len() {
			if !sameBits(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !sameBits(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameBits(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// TestEncodeArgsRefusesInvalidMapKey: a map key that is not valid UTF-8
// has no exact form: the call is refused, naming the argument.
func TestEncodeArgsRefusesInvalidMapKey(t *testing.T) {
	rt := &Runtime{}
	def := &TaskDef{Name: "keys"}
	args := struct {
		Attrs map[string]int `json:"attrs"`
	}{Attrs: map[string]int{"ok": 1, "b\xffd": 2}}
	_, err := GeneratedCall{Runtime: rt, Register: "Register", Task: def, Args: args}.Submit(context.Background())
	if !errors.Is(err, ErrNotPersisted) {
		t.Fatalf("got %v, want ErrNotPersisted", err)
	}
	for _, want := range []string{`argument "attrs"`, "map key", "not valid UTF-8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestDecodeJSONRefusesUnknownNestedField: a stored member the current type
// lacks, at any depth, makes the arguments undecodable (naming the member)
// rather than run with a zero value.
func TestDecodeJSONRefusesUnknownNestedField(t *testing.T) {
	type line struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
	}
	type order struct {
		ID    int64  `json:"id"`
		Lines []line `json:"lines"`
	}
	type args struct {
		Order order `json:"order"`
	}
	var v args
	ok := `{"order":{"id":7,"lines":[{"sku":"a","quantity":2}]}}`
	if err := DecodeJSON([]byte(ok), &v, "order"); err != nil || v.Order.Lines[0].Quantity != 2 {
		t.Fatalf("current form: %v, %+v", err, v)
	}
	for _, stored := range []string{
		`{"order":{"id":7,"lines":[{"sku":"a","qty":2}]}}`, // renamed at depth 3
		`{"order":{"id":7,"currency":"EUR","lines":[]}}`,   // added at depth 2
		`{"order":{"id":7,"lines":[{"sku":"a","quantity":2,"gift":{"wrap":true}}]}}`,
	} {
		err := DecodeJSON([]byte(stored), &args{}, "order")
		if !IsUndecodable(err) {
			t.Errorf("%s: got %v, want Undecodable", stored, err)
			continue
		}
		if !strings.Contains(err.Error(), `argument "order" at /order`) || !strings.Contains(err.Error(), "unknown") {
			t.Errorf("%s: error %q does not name the unknown member", stored, err)
		}
	}
}

// TestDecodeJSONFloatStrings: only float-kinded values accept the strings
// NaN/+Inf/-Inf; a string field keeps the text, a bad float string is
// undecodable.
func TestDecodeJSONFloatStrings(t *testing.T) {
	type args struct {
		F float64 `json:"f"`
		S string  `json:"s"`
	}
	var v args
	if err := DecodeJSON([]byte(`{"f":"-Inf","s":"NaN"}`), &v, "f", "s"); err != nil || !math.IsInf(v.F, -1) || v.S != "NaN" {
		t.Fatalf("got %v, %+v", err, v)
	}
	for _, stored := range []string{`{"f":"nan","s":""}`, `{"f":"Infinity","s":""}`, `{"f":" 1","s":""}`, `{"f":1,"s":{"other":"x"}}`, `{"f":1,"s":{"argo:invalid-utf8":"!!"}}`} {
		if err := DecodeJSON([]byte(stored), &args{}, "f", "s"); !IsUndecodable(err) {
			t.Errorf("%s: got %v, want Undecodable", stored, err)
		}
	}
}

// TestDecodeArgsMatchesEncodingJSON: what encoding/json wrote decodes into
// the same value through decodeArgs as through encoding/json (field names
// matched case-insensitively, null leaves a value as is, ",string" fields).
func TestDecodeArgsMatchesEncodingJSON(t *testing.T) {
	type target struct {
		Name     string             `json:"name"`
		Count    int                `json:"count,string"`
		Ratio    float64            `json:",string"`
		Keep     string             `json:"keep"`
		Tags     []string           `json:"tags"`
		Attrs    map[string]float32 `json:"attrs"`
		When     time.Time          `json:"when"`
		Bytes    []byte             `json:"bytes"`
		Ptr      *int               `json:"ptr"`
		Embedded argsCorpusEmbedded `json:"embedded"`
	}
	for _, stored := range []string{
		`{"name":"a","count":"3","Ratio":"2.5","keep":null,"tags":["x"],"attrs":{"k":1.5},"when":"2026-11-22T16:00:00.000000123+01:00","bytes":"AAEC+g==","ptr":7,"embedded":{"inner":"i"}}`,
		`{"NAME":"case","COUNT":"-1","tags":null,"attrs":{},"ptr":null}`,
		`{"name":"\u00e9\ud83c\udf89\u2028<>&"}`,
	} {
		want, got := target{Keep: "kept"}, target{Keep: "kept"}
		werr := json.Unmarshal([]byte(stored), &want)
		gerr := decodeArgs([]byte(stored), &got)
		if werr != nil || gerr != nil {
			t.Errorf("%s: encoding/json %v, decodeArgs %v", stored, werr, gerr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n decodeArgs    %+v\n encoding/json %+v", stored, got, want)
		}
	}
}

// TestEncodeArgsRefusesInexactInsideInterface: inside an interface type a
// string that is not UTF-8 or a NaN/Inf float would come back as another
// type (a map, a string): the call is refused, naming the argument; other
// values inside interfaces are stored as encoding/json stores them.
func TestEncodeArgsRefusesInexactInsideInterface(t *testing.T) {
	rt := &Runtime{}
	def := &TaskDef{Name: "iface"}
	type args struct {
		Extra any `json:"extra"`
	}
	for _, v := range []any{"a\xff", math.NaN(), []any{1, map[string]any{"k": math.Inf(-1)}}, &struct{ S *string }{S: new("\xfe")}} {
		_, err := GeneratedCall{Runtime: rt, Register: "Register", Task: def, Args: args{Extra: v}}.Submit(context.Background())
		if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), `argument "extra"`) || !strings.Contains(err.Error(), "inside an interface type") {
			t.Errorf("%#v in an interface: %v, want ErrNotPersisted naming the argument", v, err)
		}
	}
	ok := args{Extra: map[string]any{"k": []any{1.5, "s", nil, true}}}
	got, err := encodeArgs(ok)
	want, _ := json.Marshal(ok)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("finite values in an interface: %s, %v; want %s", got, err, want)
	}
}

// TestEncodeArgsRefusesInvalidMethodOutput: a MarshalJSON or MarshalText
// whose output is not valid UTF-8 refuses the call (encoding/json would
// replace the bytes).
func TestEncodeArgsRefusesInvalidMethodOutput(t *testing.T) {
	for _, v := range []any{argsBadJSON{}, argsBadText{}} {
		if b, err := encodeArgs(v); err == nil {
			t.Errorf("%T: stored %q, want an error", v, b)
		}
	}
}

type argsBadJSON struct{}

func (argsBadJSON) MarshalJSON() ([]byte, error) { return []byte("\"a\xffb\""), nil }

type argsBadText struct{}

func (argsBadText) MarshalText() ([]byte, error) { return []byte("a\xffb"), nil }
