package main

import (
	"reflect"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// TestStorageFilter: the bench explains the statements of the filters it
// times, field by field; a NameSuffix (no storage field) is refused rather
// than explained as a query without it.
func TestStorageFilter(t *testing.T) {
	shard := 3
	f := runtime.Filter{States: []runtime.State{runtime.StateDead}, NameContains: "refund", Tenant: "t3",
		UniqueKey: "k-1", BeforeID: 42, Shard: &shard, Limit: 50, Offset: 5}
	got, err := storageFilter(f)
	want := storage.Filter{States: []runtime.State{runtime.StateDead}, NameContains: "refund", Tenant: "t3",
		UniqueKey: "k-1", BeforeID: 42, Shard: &shard, Limit: 50, Offset: 5}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("storageFilter(%+v) = %+v, %v; want %+v", f, got, err, want)
	}
	if _, err := storageFilter(runtime.Filter{NameSuffix: "Refund"}); err == nil {
		t.Fatalf("storageFilter of a NameSuffix: no error; want one (the store has no such criterion)")
	}
}
