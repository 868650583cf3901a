package clusteruser

import (
	"slices"
	"testing"
)

func TestDocCommandWith(t *testing.T) {
	doc := DocCommand{"echo", "status", "journal", "-o", "wide"}
	got := doc.With("journal", "web", "wide", "yaml")
	if want := (DocCommand{"echo", "status", "web", "-o", "yaml"}); !slices.Equal(got, want) {
		t.Errorf("With = %v, want %v", got, want)
	}
	if doc[2] != "journal" {
		t.Errorf("With changed the documented command: %v", doc)
	}
	if got := doc.With("status"); !slices.Equal(got, doc) {
		t.Errorf("With of an odd list = %v", got)
	}
}
