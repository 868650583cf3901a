package names

import (
	"strings"
	"testing"
)

func TestChild(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		parent, suffix string
		check          func(string) bool
	}{
		{"web-1", "backup", func(n string) bool { return n == "web-1-backup" }},
		{long, "backup", func(n string) bool { return len(n) <= 63 && strings.HasSuffix(n, "-backup") }},
		{long, "config", func(n string) bool { return len(n) <= 63 && n != Child(long, "backup") }},
	}
	for _, tc := range cases {
		got := Child(tc.parent, tc.suffix)
		if !tc.check(got) {
			t.Errorf("Child(%q, %q) = %q", tc.parent, tc.suffix, got)
		}
		if again := Child(tc.parent, tc.suffix); again != got {
			t.Errorf("Child is not deterministic: %q then %q", got, again)
		}
	}
	if Child(long+"x", "backup") == Child(long+"y", "backup") {
		t.Error("different parents shortened to the same name")
	}
}

func TestCopyJob(t *testing.T) {
	if got := CopyJob("web-nightly-1", "offsite"); got != "web-nightly-1-copy-offsite" {
		t.Errorf("CopyJob = %q", got)
	}
	long := strings.Repeat("b", 60)
	if got := CopyJob(long, "offsite"); len(got) > MaxLen || !strings.HasSuffix(got, "-copy-offsite") {
		t.Errorf("CopyJob of a long backup = %q", got)
	}
}
