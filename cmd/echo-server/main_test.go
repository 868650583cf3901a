package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestParseOptions(t *testing.T) {
	defaults := options{listen: ":8080", message: "Hello from Echo", shutdownTimeout: 20 * time.Second, logLevel: slog.LevelInfo}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(*options)
		wantErr string
	}{
		{name: "defaults", want: func(*options) {}},
		{
			name: "environment",
			env: map[string]string{
				"ECHO_LISTEN": ":9090", "ECHO_MESSAGE": "hi", "ECHO_DATA_DIR": "/data",
				"ECHO_INSTANCE": "web-0", "ECHO_SHUTDOWN_TIMEOUT": "5s", "ECHO_LOG_LEVEL": "debug",
			},
			want: func(o *options) {
				o.listen, o.message, o.dataDir, o.instance = ":9090", "hi", "/data", "web-0"
				o.shutdownTimeout, o.logLevel = 5*time.Second, slog.LevelDebug
			},
		},
		{
			name: "flags win over environment",
			args: []string{"--listen=:7070", "--message", "flag", "--data-dir=/var/echo", "--instance=web-1", "--shutdown-timeout=1m", "--log-level=warn"},
			env:  map[string]string{"ECHO_LISTEN": ":9090", "ECHO_MESSAGE": "env", "ECHO_INSTANCE": "web-0", "ECHO_SHUTDOWN_TIMEOUT": "5s"},
			want: func(o *options) {
				o.listen, o.message, o.dataDir, o.instance = ":7070", "flag", "/var/echo", "web-1"
				o.shutdownTimeout, o.logLevel = time.Minute, slog.LevelWarn
			},
		},
		{name: "empty message from environment", env: map[string]string{"ECHO_MESSAGE": ""}, want: func(o *options) { o.message = "" }},
		{name: "bad timeout in environment", env: map[string]string{"ECHO_SHUTDOWN_TIMEOUT": "soon"}, wantErr: "invalid shutdown timeout"},
		{name: "negative timeout", args: []string{"--shutdown-timeout=-1s"}, wantErr: "invalid shutdown timeout"},
		{name: "bad log level", args: []string{"--log-level=loud"}, wantErr: "invalid log level"},
		{name: "unknown flag", args: []string{"--port=1"}, wantErr: "flag provided but not defined"},
		{name: "positional argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got, err := parseOptions(tt.args, lookup, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOptions: %v", err)
			}
			want := defaults
			tt.want(&want)
			if got != want {
				t.Errorf("options = %+v, want %+v", got, want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := parseOptions([]string{"-h"}, func(string) (string, bool) { return "", false }, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"ECHO_LISTEN", "ECHO_MESSAGE", "ECHO_DATA_DIR", "ECHO_INSTANCE", "ECHO_SHUTDOWN_TIMEOUT", "ECHO_LOG_LEVEL"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("usage does not mention %s", name)
		}
	}
}

func TestRunUsageError(t *testing.T) {
	var stderr strings.Builder
	code := run([]string{"--bogus"}, func(string) (string, bool) { return "", false }, &stderr)
	if code != exitUsage {
		t.Errorf("exit code = %d, want %d", code, exitUsage)
	}
}
