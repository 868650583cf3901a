package backupstore

import (
	"errors"
	"testing"
)

func TestCheckKey(t *testing.T) {
	for _, ok := range []string{"k", "ns/echo/2026-01-01T00-00-00Z", "a.b/c_d-e"} {
		if err := CheckKey(ok); err != nil {
			t.Errorf("CheckKey(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/abs", "a//b", "a/", "../x", "a/../b", "a/./b", ".", `a\b`, "a\x00"} {
		if err := CheckKey(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, ok := range []string{"", "a", "a/", "a/b/"} {
		if err := checkPrefix(ok); err != nil {
			t.Errorf("checkPrefix(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"/", "../", "a//"} {
		if err := checkPrefix(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("checkPrefix(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}
