package runtime

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// distinctValue is a non-zero value of type t, different for each seed, so
// that two fields swapped by a conversion do not compare equal.
func distinctValue(t *testing.T, typ reflect.Type, seed int) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch {
	case typ == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+seed), 0)))
	case typ.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("value-%d", seed))
	case typ.Kind() == reflect.Bool:
		v.SetBool(true)
	case v.CanInt():
		v.SetInt(int64(seed + 1))
	case typ.Kind() == reflect.Slice:
		v = reflect.Append(v, distinctValue(t, typ.Elem(), seed))
	case typ.Kind() == reflect.Pointer:
		v = reflect.New(typ.Elem())
		v.Elem().Set(distinctValue(t, typ.Elem(), seed))
	default:
		t.Fatalf("distinctValue: no value for a field of type %s: add its kind here", typ)
	}
	return v
}

// TestFilterToStorageCopiesEveryField: every field of Filter, NameSuffix
// aside (the Inspector resolves it into Names), reaches the field of its
// name in storage.Filter, and every exported field of storage.Filter has a
// field of Filter: a criterion added to one type and not the other, or
// left out of toStorage, fails here.
func TestFilterToStorageCopiesEveryField(t *testing.T) {
	var f Filter
	fv := reflect.ValueOf(&f).Elem()
	for i := 0; i < fv.NumField(); i++ {
		fv.Field(i).Set(distinctValue(t, fv.Type().Field(i).Type, i))
	}
	got := reflect.ValueOf(f.toStorage())
	for i := 0; i < fv.NumField(); i++ {
		name := fv.Type().Field(i).Name
		if name == "NameSuffix" {
			if _, ok := got.Type().FieldByName(name); ok {
				t.Errorf("storage.Filter has a NameSuffix field: only the Inspector resolves name suffixes (resolveNames)")
			}
			continue
		}
		sf, ok := got.Type().FieldByName(name)
		if !ok {
			t.Errorf("Filter.%s has no field in storage.Filter: add it there and to toStorage", name)
			continue
		}
		if sf.Type != fv.Field(i).Type() {
			t.Errorf("Filter.%s is a %s, storage.Filter.%s a %s", name, fv.Field(i).Type(), name, sf.Type)
			continue
		}
		if !reflect.DeepEqual(got.FieldByName(name).Interface(), fv.Field(i).Interface()) {
			t.Errorf("toStorage: %s = %v, want %v", name, got.FieldByName(name), fv.Field(i))
		}
	}
	for i := 0; i < got.NumField(); i++ {
		sf := got.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if _, ok := fv.Type().FieldByName(sf.Name); !ok {
			t.Errorf("storage.Filter.%s has no field in runtime.Filter: users cannot set it", sf.Name)
		}
	}
}

// TestFilterEmpty: the zero Filter, and one with only paging, is empty;
// any one criterion, NameSuffix included, makes it not.
func TestFilterEmpty(t *testing.T) {
	if !(Filter{}).Empty() || !(Filter{Limit: 10, Offset: 20}).Empty() {
		t.Fatalf("a Filter with no criterion (paging aside) is not Empty")
	}
	typ := reflect.TypeOf(Filter{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if name == "Limit" || name == "Offset" {
			continue
		}
		var f Filter
		reflect.ValueOf(&f).Elem().Field(i).Set(distinctValue(t, typ.Field(i).Type, i))
		if f.Empty() {
			t.Errorf("a Filter with only %s set is Empty", name)
		}
	}
}
