package main

import (
	"reflect"
	"testing"
)

func TestSplitNamespaces(t *testing.T) {
	cases := map[string][]string{
		"":              nil,
		"team-a":        {"team-a"},
		"team-a,team-b": {"team-a", "team-b"},
		" a , ,b ":      {"a", "b"},
	}
	for in, want := range cases {
		if got := splitNamespaces(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitNamespaces(%q) = %v, want %v", in, got, want)
		}
	}
}
