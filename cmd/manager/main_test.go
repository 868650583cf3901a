package main

import (
	"os"
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

func TestGoMemoryLimit(t *testing.T) {
	tests := []struct {
		name, memoryLimit, gomemlimit string
		want                          int64
		wantSet                       bool
	}{
		{name: "the container's limit less the headroom", memoryLimit: "1073741824", want: 912680550, wantSet: true},
		{name: "GOMEMLIMIT wins", memoryLimit: "1073741824", gomemlimit: "500MiB"},
		{name: "no limit given"},
		{name: "not a number", memoryLimit: "1Gi"},
		{name: "zero", memoryLimit: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(memoryLimitEnv, tt.memoryLimit)
			// Set, then unset when the case has none: restored after.
			t.Setenv("GOMEMLIMIT", tt.gomemlimit)
			if tt.gomemlimit == "" {
				_ = os.Unsetenv("GOMEMLIMIT")
			}
			got, ok := goMemoryLimit()
			if got != tt.want || ok != tt.wantSet {
				t.Errorf("goMemoryLimit() = %d, %v; want %d, %v", got, ok, tt.want, tt.wantSet)
			}
		})
	}
}
