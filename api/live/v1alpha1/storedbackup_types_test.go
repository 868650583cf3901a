package v1alpha1

import "testing"

func TestStoredBackupNames(t *testing.T) {
	for _, tc := range []struct {
		location, key, name string
		ok                  bool
	}{
		{location: "dr", key: "team-a/web/web-nightly-20260101", name: "dr.team-a.web.web-nightly-20260101", ok: true},
		{location: "dr", key: "team-a/web/before.upgrade.v2", name: "dr.team-a.web.before.upgrade.v2", ok: true},
		{location: "dr", key: "team-a/web"},
		{location: "dr", key: "team-a/web/x/y"},
		{location: "dr", key: "Team/web/x"},
		{location: "dr", key: "team-a/9web/x"},
		{location: "dr", key: "team-a/web/-x"},
		{location: "dr", key: "../web/x"},
	} {
		name, ok := StoredBackupName(tc.location, tc.key)
		if name != tc.name || ok != tc.ok {
			t.Errorf("StoredBackupName(%q, %q) = %q, %v; want %q, %v", tc.location, tc.key, name, ok, tc.name, tc.ok)
		}
		if !tc.ok {
			continue
		}
		location, key, ok := ParseStoredBackupName(name)
		if location != tc.location || key != tc.key || !ok {
			t.Errorf("ParseStoredBackupName(%q) = %q, %q, %v", name, location, key, ok)
		}
	}
	for _, name := range []string{"dr", "dr.team-a.web", "dr.team-a.9web.x", "DR.a.web.x", "dr.a.web.x.", "dr..web.x"} {
		if l, k, ok := ParseStoredBackupName(name); ok {
			t.Errorf("ParseStoredBackupName(%q) = %q, %q, true; want false", name, l, k)
		}
	}
}
