package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLen is the longest child name: it must fit a label value.
const MaxLen = 63

// Child derives the deterministic name of an object a backup, restore
// or Echo owns: parent name and suffix, shortened with a hash when the
// result would not fit a label value.
func Child(parent, suffix string) string {
	name := parent + "-" + suffix
	if len(name) <= MaxLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := MaxLen - len(suffix) - len(hash) - 2
	return strings.TrimRight(parent[:keep], "-.") + "-" + hash + "-" + suffix
}

// CopyJob is the name of the Job that copies the backup to its copy of
// that name (spec.copyTo[].name).
func CopyJob(backup, copyName string) string { return Child(backup, "copy-"+copyName) }
