//go:build !linux

package imagebuild

import "time"

// lchtimes is a no-op where no image is built (see Unavailable).
func lchtimes(string, time.Time) error { return nil }
