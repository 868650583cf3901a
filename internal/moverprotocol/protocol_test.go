package moverprotocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	for _, c := range Commands {
		got, ok := ParseCommand(string(c))
		if !ok || got != c {
			t.Errorf("ParseCommand(%q) = %q, %v", c, got, ok)
		}
	}
	for _, name := range []string{"", "Backup", "serve", "backup "} {
		if _, ok := ParseCommand(name); ok {
			t.Errorf("ParseCommand(%q) accepted a command the manager does not have", name)
		}
	}
}

func TestTakesDataDir(t *testing.T) {
	want := map[Command]bool{Backup: true, Restore: true, Inspect: false, Delete: false}
	for c, w := range want {
		if c.TakesDataDir() != w {
			t.Errorf("%s.TakesDataDir() = %v, want %v", c, !w, w)
		}
	}
}

func TestArgs(t *testing.T) {
	cases := []struct{ got, want string }{
		{Arg(FlagKey, "ns/web/b1"), "--key=ns/web/b1"},
		{Arg(FlagS3Endpoint, "https://s3.example.test:9000"), "--s3-endpoint=https://s3.example.test:9000"},
		{Switch(FlagS3PathStyle), "--s3-path-style"},
		{CompressionArg("Gzip"), "--compression=gzip"},
		{CompressionArg("None"), "--compression=none"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	if ExitCode(true) != ExitRetryable || ExitCode(false) != ExitPermanent || ExitRetryable == ExitPermanent {
		t.Errorf("ExitCode(true) = %d, ExitCode(false) = %d", ExitCode(true), ExitCode(false))
	}
}

func TestDecode(t *testing.T) {
	archive := Archive{Size: 1234, Checksum: "sha256:ab", Location: "s3://b/k", Files: 3}
	encoded, err := Encode(archive)
	if err != nil {
		t.Fatal(err)
	}
	var got Archive
	if f, err := Decode(encoded, &got); err != nil || f != nil || got != archive {
		t.Fatalf("Decode(%s) = %+v, %v, %v; want %+v", encoded, got, f, err, archive)
	}

	failure, err := Encode(Failure{Error: "denied", Reason: ReasonAccessDenied})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(failure), `"retryable":false`) {
		t.Errorf("a failure must always say whether it is retryable: %s", failure)
	}
	got = Archive{}
	f, err := Decode(failure, &got)
	if err != nil || f == nil || f.Reason != ReasonAccessDenied || f.Error != "denied" || got != (Archive{}) {
		t.Fatalf("Decode(%s) = %+v, %+v, %v; want the failure alone", failure, got, f, err)
	}

	var inspection Inspection
	msg := []byte(` {"location":"s3://b/k","source":{"namespace":"a","name":"web","uid":"u","generation":3},"files":2,"echo":{"spec":{}}}` + "\n")
	if f, err := Decode(msg, &inspection); err != nil || f != nil || inspection.Source.Generation != 3 || !json.Valid(inspection.Echo) {
		t.Fatalf("Decode(inspection) = %+v, %v, %v", inspection, f, err)
	}

	for _, bad := range []string{"", "panic: runtime error", `{"size":`, `[1,2]`, `"text"`} {
		if _, err := Decode([]byte(bad), &Archive{}); err == nil {
			t.Errorf("Decode(%q) accepted what is not a result", bad)
		}
	}
}
