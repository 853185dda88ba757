package main

import (
	"fmt"
	"reflect"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// storageFilter is f as the store's ListQuery and CountUpToQuery take it
// (the Inspector converts it the same way, unexported), for the plans of
// the statements the console's list page runs: each field copied to the
// storage.Filter field of its name. A criterion set in f that the store
// has no field for (NameSuffix, which only the Inspector resolves) is an
// error, not a silently wider query.
func storageFilter(f runtime.Filter) (storage.Filter, error) {
	var out storage.Filter
	src, dst := reflect.ValueOf(f), reflect.ValueOf(&out).Elem()
	for i := 0; i < src.NumField(); i++ {
		name := src.Type().Field(i).Name
		to := dst.FieldByName(name)
		if !to.IsValid() || !to.CanSet() {
			if !src.Field(i).IsZero() {
				return out, fmt.Errorf("runtime.Filter.%s has no storage.Filter field: the bench cannot explain it", name)
			}
			continue
		}
		to.Set(src.Field(i))
	}
	return out, nil
}
