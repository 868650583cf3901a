package toolbin

import (
	"os"
	"testing"
)

// Path returns the path in the environment variable env, or skips the test
// when it is unset: run outside make, the tool was not built. Under CI,
// which must run every test, it fails the test instead. tool names what
// make builds, for the message.
func Path(tb testing.TB, env, tool string) string {
	tb.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		const why = "%s is not set: run the tests through make (make test), which builds %s and sets it"
		if os.Getenv("CI") != "" {
			tb.Fatalf(why, env, tool)
		}
		tb.Skipf(why, env, tool)
	}
	return bin
}
