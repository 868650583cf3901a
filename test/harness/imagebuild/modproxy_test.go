package imagebuild

import "testing"

func TestModuleVersion(t *testing.T) {
	for _, tc := range []struct {
		path, mod, version string
		ok                 bool
	}{
		{"/github.com/!burnt!sushi/toml/@v/v1.6.0.zip", "github.com/BurntSushi/toml", "v1.6.0", true},
		{"/k8s.io/api/@v/v0.35.1.mod", "k8s.io/api", "v0.35.1", true},
		{"/golang.org/x/sys/@v/v0.0.0-20260101000000-abcdef012345.info", "golang.org/x/sys", "v0.0.0-20260101000000-abcdef012345", true},
		{"/k8s.io/api/@v/list", "", "", false},
		{"/k8s.io/api/@latest", "", "", false},
		{"/k8s.io/api/@v/v1.0.0.tar", "", "", false},
		{"/../etc/@v/v1.0.0.mod", "", "", false},
		{"/k8s.io/API/@v/v1.0.0.mod", "", "", false},
		{"/k8s.io/api/@v/-x.mod", "", "", false},
		{"/k8s.io/a!/@v/v1.0.0.mod", "", "", false},
		{"/k8s.io/api/@v/v1/../../x.mod", "", "", false},
	} {
		mod, version, ok := moduleVersion(tc.path)
		if mod != tc.mod || version != tc.version || ok != tc.ok {
			t.Errorf("moduleVersion(%q) = %q, %q, %v; want %q, %q, %v", tc.path, mod, version, ok, tc.mod, tc.version, tc.ok)
		}
	}
}
