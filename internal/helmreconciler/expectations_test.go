package helmreconciler

import "testing"

func TestExpectations(t *testing.T) {
	e := newExpectations()
	if !e.seen("uid/web", 1) {
		t.Error("a release this process never wrote is trusted as cached")
	}

	e.expect("uid/web", 3)
	e.expect("uid/web", 2) // an older write reported late does not lower it
	if e.seen("uid/web", 2) {
		t.Error("a cache that still shows revision 2 is trusted after revision 3 was written")
	}
	if !e.seen("uid/api", 1) {
		t.Error("another release is held back")
	}
	if !e.seen("uid/web", 3) {
		t.Error("the cache shows revision 3 and is not trusted")
	}
	if !e.seen("uid/web", 1) {
		t.Error("the expectation is kept after it was met")
	}

	e.expect("uid/web", 5)
	e.forget("uid/web")
	if !e.seen("uid/web", 1) {
		t.Error("a forgotten release is held back")
	}
}
