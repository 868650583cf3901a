package liveapi

import (
	"encoding/base64"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPage(t *testing.T) {
	items := func() []metav1.ObjectMeta {
		return []metav1.ObjectMeta{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "y"}, {Namespace: "a", Name: "x"}}
	}
	meta := func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m }
	token := func(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }
	for _, tc := range []struct {
		name     string
		q        listQuery
		want     []string
		wantNext string
	}{
		{name: "everything, sorted", want: []string{"a/x", "a/y", "b/x"}},
		{name: "first page", q: listQuery{limit: 2}, want: []string{"a/x", "a/y"}, wantNext: token("a/y")},
		{name: "last page", q: listQuery{limit: 2, after: "a/y"}, want: []string{"b/x"}},
		{name: "limit equal to the rest", q: listQuery{limit: 1, after: "a/y"}, want: []string{"b/x"}},
		{name: "after an item gone since", q: listQuery{after: "a/xx"}, want: []string{"a/y", "b/x"}},
		{name: "after the end", q: listQuery{after: "c/a"}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next := page(items(), meta, tc.q)
			keys := []string{}
			for i := range got {
				keys = append(keys, listKey(&got[i]))
			}
			if len(keys) != len(tc.want) || next != tc.wantNext {
				t.Fatalf("page = %v, %q; want %v, %q", keys, next, tc.want, tc.wantNext)
			}
			for i := range keys {
				if keys[i] != tc.want[i] {
					t.Fatalf("page = %v; want %v", keys, tc.want)
				}
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KiB", 1417: "1.4KiB", 5 << 20: "5.0MiB", 3 << 30: "3.0GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q; want %q", n, got, want)
		}
	}
}
