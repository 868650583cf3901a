package echoserver

import (
	"errors"
	"strings"
	"testing"
)

func TestSanitizeInstance(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "pod name kept", in: "echo-7d9f-x2k4l", want: "echo-7d9f-x2k4l"},
		{name: "dots and underscores kept", in: "web_1.prod", want: "web_1.prod"},
		{name: "parent traversal", in: "../../etc/passwd", want: "_._.._etc_passwd"},
		{name: "dot dot", in: "..", want: "_."},
		{name: "single dot", in: ".", want: "_"},
		{name: "hidden file", in: ".journal", want: "_journal"},
		{name: "absolute path", in: "/var/lib/x", want: "_var_lib_x"},
		{name: "backslash", in: `a\b`, want: "a_b"},
		{name: "nul byte", in: "a\x00b", want: "a_b"},
		{name: "spaces", in: "my pod", want: "my_pod"},
		{name: "non ascii rune becomes one underscore", in: "pöd", want: "p_d"},
		{name: "max length", in: strings.Repeat("a", maxInstanceLen), want: strings.Repeat("a", maxInstanceLen)},
		{name: "too long", in: strings.Repeat("a", maxInstanceLen+1), wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SanitizeInstance(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidInstance) {
					t.Fatalf("SanitizeInstance(%q) error = %v, want ErrInvalidInstance", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SanitizeInstance(%q) unexpected error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("SanitizeInstance(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.ContainsAny(got, `/\`) || got == "." || got == ".." {
				t.Errorf("SanitizeInstance(%q) = %q is not a plain file name", tt.in, got)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{
			name: "zero values get defaults",
			in:   Config{Instance: "a/b"},
			want: Config{Listen: DefaultListen, Instance: "a_b", MaxBodyBytes: DefaultMaxBodyBytes, ShutdownTimeout: DefaultShutdownTimeout},
		},
		{
			name: "explicit values kept",
			in:   Config{Listen: "127.0.0.1:9", Message: "m", Instance: "i", DataDir: "/d", MaxBodyBytes: 10, ShutdownTimeout: 3},
			want: Config{Listen: "127.0.0.1:9", Message: "m", Instance: "i", DataDir: "/d", MaxBodyBytes: 10, ShutdownTimeout: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if err != nil {
				t.Fatalf("withDefaults: %v", err)
			}
			if got.Logger == nil {
				t.Error("Logger is nil, want a discarding logger")
			}
			got.Logger = nil
			if got != tt.want {
				t.Errorf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
