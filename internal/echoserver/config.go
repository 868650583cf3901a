package echoserver

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Defaults applied by New to zero-valued Config fields.
const (
	DefaultListen          = ":8080"
	DefaultMessage         = "Hello from Echo"
	DefaultMaxBodyBytes    = 1 << 20 // 1 MiB
	DefaultShutdownTimeout = 20 * time.Second
)

// maxInstanceLen keeps "<instance>.jsonl" within the usual 255-byte file
// name limit.
const maxInstanceLen = 255 - len(journalExt)

// ErrInvalidInstance reports an instance name that cannot be used, even after
// sanitisation.
var ErrInvalidInstance = errors.New("invalid instance name")

// Config holds everything a Server needs. Zero values of Listen, MaxBodyBytes
// and ShutdownTimeout are replaced by the defaults above.
type Config struct {
	// Listen is the TCP address Run listens on, e.g. ":8080".
	Listen string
	// Message is returned in every echo response and stored in the journal.
	Message string
	// Instance identifies this replica in responses and names its journal
	// file. It is sanitised with SanitizeInstance; it must not be empty.
	Instance string
	// DataDir enables persistence when non-empty: the journal lives in
	// DataDir/journal. Nothing is ever written outside this directory.
	DataDir string
	// MaxBodyBytes bounds the request body an echo request may carry;
	// larger bodies are answered with 413.
	MaxBodyBytes int64
	// ShutdownTimeout bounds how long Run waits for in-flight requests
	// once its context is cancelled.
	ShutdownTimeout time.Duration
	// Logger receives structured logs. Nil discards them.
	Logger *slog.Logger
}

// withDefaults returns a copy of c with defaults filled in and the instance
// name sanitised.
func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	instance, err := SanitizeInstance(c.Instance)
	if err != nil {
		return Config{}, err
	}
	c.Instance = instance
	return c, nil
}

// SanitizeInstance maps an instance name to a safe file name stem: every
// character outside [A-Za-z0-9._-] becomes '_', and a leading '.' becomes '_'
// so the result is never ".", ".." or a hidden file. The result therefore
// cannot contain a path separator and cannot leave the journal directory.
// Empty names and names longer than 249 bytes are rejected.
func SanitizeInstance(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidInstance)
	}
	safe := strings.Map(safeRune, name)
	if safe[0] == '.' {
		safe = "_" + safe[1:]
	}
	if len(safe) > maxInstanceLen {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidInstance, maxInstanceLen)
	}
	return safe, nil
}

func safeRune(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return r
	case r == '.', r == '_', r == '-':
		return r
	default:
		return '_'
	}
}
