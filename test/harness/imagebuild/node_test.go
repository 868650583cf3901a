package imagebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestNodeImagesMatchTheirDockerfile builds each stage of the node's
// Dockerfile with BuildKit into the archive a node imports, and checks that
// it holds what a node with no builder writes from the same binaries
// (realnode.WriteImageWithLinks): the same files, modes, owners, contents
// and links, and the same user, entrypoint and environment.
func TestNodeImagesMatchTheirDockerfile(t *testing.T) {
	env, _ := needBuilder(t)
	bins, err := realnode.LocateBinaries()
	if err != nil {
		t.Fatal(err)
	}
	opts := realnode.Options{Binaries: bins, ClusterServices: true}
	images := opts.NodeImages()
	archives, err := env.BuildNodeImages(context.Background(), reporoot.Must(t), images)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		t.Run(im.Target, func(t *testing.T) {
			built, err := imagebuild.ReadArchive(archives[im.Ref])
			if err != nil {
				t.Fatal(err)
			}
			written := filepath.Join(t.TempDir(), "written.tar")
			if err := realnode.WriteImageWithLinks(written, im.Ref, im.Config, im.Files, im.Links); err != nil {
				t.Fatal(err)
			}
			want, err := imagebuild.ReadArchive(written)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Files) == 0 {
				t.Fatal("the written image holds no file: the comparison would prove nothing")
			}
			if got, want := filesAndLinks(built), filesAndLinks(want); !reflect.DeepEqual(got, want) {
				t.Errorf("BuildKit's image holds\n%v\nthe written one\n%v", got, want)
			}
			b, w := built.Config.Config, want.Config.Config
			if b.User != w.User || !slices.Equal(b.Entrypoint, w.Entrypoint) || !slices.Equal(b.Env, w.Env) || !slices.Equal(b.Cmd, w.Cmd) {
				t.Errorf("BuildKit's image runs user %q entrypoint %q cmd %q env %q; the written one %q %q %q %q",
					b.User, b.Entrypoint, b.Cmd, b.Env, w.User, w.Entrypoint, w.Cmd, w.Env)
			}
		})
	}
}

// filesAndLinks are an image's regular files and links: directories are
// the builder's business.
func filesAndLinks(img *imagebuild.Image) map[string]imagebuild.File {
	out := map[string]imagebuild.File{}
	for name, f := range img.Files {
		if !f.Mode.IsDir() {
			out[name] = f
		}
	}
	return out
}

// TestReadArchiveReadsWhatANodeWrites reads an image that realnode writes
// from files of this machine back: files with their contents' digest, links
// and configuration.
func TestReadArchiveReadsWhatANodeWrites(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "image.tar")
	config := realnode.ImageConfig{Entrypoint: []string{"/bin/tool"}, User: "65532:65532", Env: []string{"PATH=/bin"}}
	if err := realnode.WriteImageWithLinks(archive, "localhost/test/tool:latest", config,
		map[string]string{"/bin/tool": bin}, map[string]string{"/bin/sh": "tool"}); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.ReadArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	tool, link := img.Files["/bin/tool"], img.Files["/bin/sh"]
	// The digest of "#!/bin/sh\n".
	const digest = "a8076d3d28d21e02012b20eaf7dbf75409a6277134439025f282e368e3305abf"
	if tool.SHA256 != digest || tool.Size != 10 || tool.Mode.Perm() != 0o755 {
		t.Errorf("/bin/tool reads as %+v, want 10 bytes of digest %s, mode 0755", tool, digest)
	}
	if link.Linkname != "tool" {
		t.Errorf("/bin/sh reads as %+v, want a link to tool", link)
	}
	if c := img.Config.Config; c.User != config.User || !slices.Equal(c.Entrypoint, config.Entrypoint) || !slices.Equal(c.Env, config.Env) {
		t.Errorf("the configuration reads as %+v, want %+v", c, config)
	}
}
