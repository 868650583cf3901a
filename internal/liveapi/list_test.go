package liveapi

import (
	"cmp"
	"encoding/base64"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPage pages a list as page does, and as a pageCollector does, which
// must agree; a collector's bound cuts a page as a limit would.
func TestPage(t *testing.T) {
	items := func() []metav1.ObjectMeta {
		return []metav1.ObjectMeta{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "y"}, {Namespace: "a", Name: "x"}}
	}
	meta := func(m *metav1.ObjectMeta) *metav1.ObjectMeta { return m }
	token := func(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }
	for _, tc := range []struct {
		name  string
		q     listQuery
		bound int
		// collected says the case is the collector's alone.
		collected bool
		want      []string
		wantNext  string
	}{
		{name: "everything, sorted", want: []string{"a/x", "a/y", "b/x"}},
		{name: "first page", q: listQuery{limit: 2}, want: []string{"a/x", "a/y"}, wantNext: token("a/y")},
		{name: "last page", q: listQuery{limit: 2, after: "a/y"}, want: []string{"b/x"}},
		{name: "limit equal to the rest", q: listQuery{limit: 1, after: "a/y"}, want: []string{"b/x"}},
		{name: "after an item gone since", q: listQuery{after: "a/xx"}, want: []string{"a/y", "b/x"}},
		{name: "after the end", q: listQuery{after: "c/a"}, want: []string{}},
		{name: "a bound without a limit", bound: 2, collected: true, want: []string{"a/x", "a/y"}, wantNext: token("a/y")},
		{name: "a bound below the limit", q: listQuery{limit: 3}, bound: 1, collected: true, want: []string{"a/x"}, wantNext: token("a/x")},
		{name: "a bound after the token", q: listQuery{after: "a/x"}, bound: 1, collected: true, want: []string{"a/y"}, wantNext: token("a/y")},
		{name: "a bound the rest fits", q: listQuery{after: "a/x"}, bound: 2, collected: true, want: []string{"a/y", "b/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(how string, got []metav1.ObjectMeta, next string) {
				t.Helper()
				keys := []string{}
				for i := range got {
					keys = append(keys, listKey(&got[i]))
				}
				if !slices.Equal(keys, tc.want) || next != tc.wantNext {
					t.Errorf("%s: %v, %q; want %v, %q", how, keys, next, tc.want, tc.wantNext)
				}
			}
			if !tc.collected {
				got, next := page(items(), meta, tc.q)
				check("page", got, next)
			}
			c := newPageCollector(tc.q, cmp.Or(tc.bound, 100), meta)
			for _, item := range items() {
				c.add(item)
			}
			got, next := c.page()
			check("collected", got, next)
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
