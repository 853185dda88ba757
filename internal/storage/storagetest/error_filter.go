package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// errorFilterCases: argoctl list -error (Filter.ErrorContains) and the
// console's name search ignore case for every script, the same on every
// engine, and take LIKE's wildcards literally.
func errorFilterCases() []testCase {
	return []testCase{
		{"ErrorTextAnyScriptAnyCase", errorFilterScripts},
		{"NameAnyScriptAnyCase", nameFilterScripts},
	}
}

// Upper and lower case match in German, Greek, Cyrillic and Turkish text
// (SQLite's LOWER lowers ASCII letters only: "ärger" found nothing in
// "ÄRGER" there, and did on MariaDB). Letters are lowered by Unicode's
// default mapping, not a language's: Turkish İ (U+0130) is lowered to i,
// so "istanbul" finds "İSTANBUL"; dotless ı stays ı, so "yanıt" finds
// "YANıT" and "yanit" does not. % and _ in the text searched for are
// themselves, not wildcards.
func errorFilterScripts(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	texts := []string{
		"Zustellung fehlgeschlagen: ÄRGER mit dem Server",
		"ΣΦΑΛΜΑ ΔΙΚΤΥΟΥ",
		"ОШИБКА СЕТИ",
		"İSTANBUL şubesi YANıT vermedi",
		"quota 100% used_up",
		"quota 1000 usedXup",
	}
	var ids []int64
	for _, text := range texts {
		task := newTask("e", dead, 100, 0)
		task.ErrorMsg = text
		insert(t, s, task)
		ids = append(ids, task.ID)
	}
	for _, c := range []struct {
		search string
		want   []int // indexes into texts
	}{
		{"ärger", []int{0}}, {"ÄRGER", []int{0}}, {"Ärger mit", []int{0}}, {"FEHLGESCHLAGEN", []int{0}},
		{"σφαλμα", []int{1}}, {"Δικτυου", []int{1}},
		{"ошибка", []int{2}}, {"Сети", []int{2}},
		{"istanbul", []int{3}}, {"İstanbul", []int{3}}, {"ŞUBESI", []int{3}}, {"yanıt", []int{3}}, {"yanit", nil},
		{"100%", []int{4}}, {"used_up", []int{4}}, {"%", []int{4}}, {"_", []int{4}}, {"0%_", nil},
	} {
		var want []int64
		for _, i := range c.want {
			want = append(want, ids[i])
		}
		slices.Sort(want)
		slices.Reverse(want)
		got, err := s.List(ctx, storage.Filter{ErrorContains: c.search})
		if err != nil {
			t.Fatalf("-error %q: %v", c.search, err)
		}
		if g := idsOf(got); !slices.Equal(g, want) {
			t.Errorf("-error %q: tasks %v, want %v", c.search, g, want)
		}
		if n, err := s.Count(ctx, storage.Filter{ErrorContains: c.search}); err != nil || n != len(want) {
			t.Errorf("-error %q: count %d, %v; want %d", c.search, n, err, len(want))
		}
	}
}

// The console's name search (Filter.NameContains) ignores case the same way.
func nameFilterScripts(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var ids []int64
	for _, name := range []string{"Zustellung.ÄRGER", "сеть.ОШИБКА", "task_1%"} {
		task := newTask(name, dead, 100, 0)
		insert(t, s, task)
		ids = append(ids, task.ID)
	}
	for search, want := range map[string]int64{"ärger": ids[0], "ошибка": ids[1], "СЕТЬ": ids[1], "_1%": ids[2]} {
		got, err := s.List(ctx, storage.Filter{NameContains: search})
		if err != nil {
			t.Fatalf("name %q: %v", search, err)
		}
		if g := idsOf(got); !slices.Equal(g, []int64{want}) {
			t.Errorf("name %q: tasks %v, want [%d]", search, g, want)
		}
	}
}
