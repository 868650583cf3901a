package controllers

import (
	"time"
)

// Clock tells the reconcilers the time; nil is the wall clock. Tests
// inject their own to run schedules without waiting.
type Clock func() time.Time

// Now is the time by the clock.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}
