package localcluster

import (
	"os"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

// SkipReason says why a suite that builds images and starts a local
// cluster cannot run here, or is "": in -short mode (short), off Linux or
// without root, or, outside CI, when a binary is missing (locate, besides
// the node's and the image builder's, finds the suite's own). Under CI a
// missing binary is a failure, not a reason: the suite fails to set up.
func SkipReason(short bool, locate ...func() error) string {
	if short {
		return "it starts a real node: not in -short mode"
	}
	if why := realnode.Unavailable(); why != "" {
		return why
	}
	if why := imagebuild.Unavailable(); why != "" {
		return why
	}
	if os.Getenv("CI") != "" {
		return ""
	}
	locate = append([]func() error{
		func() error { _, err := realnode.LocateBinaries(); return err },
		func() error { _, err := imagebuild.LocateBinaries(); return err },
	}, locate...)
	for _, l := range locate {
		if err := l(); err != nil {
			return err.Error()
		}
	}
	return ""
}
