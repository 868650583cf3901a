package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxObjectNameLen is the longest child name: it must fit a label value.
const maxObjectNameLen = 63

// childName derives the deterministic name of an object a backup, restore
// or Echo owns: parent name and suffix, shortened with a hash when the
// result would not fit a label value.
func childName(parent, suffix string) string {
	name := parent + "-" + suffix
	if len(name) <= maxObjectNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := maxObjectNameLen - len(suffix) - len(hash) - 2
	return strings.TrimRight(parent[:keep], "-.") + "-" + hash + "-" + suffix
}
