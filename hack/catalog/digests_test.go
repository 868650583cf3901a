package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestBundleNamesImagesByDigest runs `make bundle USE_IMAGE_DIGESTS=true`
// on a copy of the repository, with IMAGE_REGISTRY a real registry on
// 127.0.0.1 (plain HTTP) holding an operator and an echo server image:
// every image the CSV names (the Deployment's, RELATED_IMAGE_*,
// containerImage, relatedImages) is the pushed one, by digest. Once the
// registry is gone, make bundle fails.
func TestBundleNamesImagesByDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs make bundle: not in -short mode")
	}
	registryBin, sdk := os.Getenv("REGISTRY"), os.Getenv("OPERATOR_SDK")
	if _, err := exec.LookPath("make"); err != nil || registryBin == "" || sdk == "" {
		t.Skip("needs make, and the registry and operator-sdk as REGISTRY and OPERATOR_SDK (eval \"$(make -s test-env)\")")
	}
	root := reporoot.Must(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reg, err := imagebuild.StartRegistry(ctx, registryBin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = reg.Stop()
		}
	}()
	want := map[string]string{}
	for _, repo := range []string{"echo/echo-operator", "echo/echo-server"} {
		want[reg.Host+"/"+repo] = pushImage(ctx, t, reg.Host, repo, "v0.1.0")
	}

	copyDir := copyRepo(t, root)
	// The tools where OPERATOR_SDK is: LOCALBIN/operator-sdk/<version>/operator-sdk.
	localbin := filepath.Dir(filepath.Dir(filepath.Dir(sdk)))
	if out, err := bundleWithDigests(ctx, copyDir, reg.Host+"/echo", localbin); err != nil {
		t.Fatalf("make bundle USE_IMAGE_DIGESTS=true: %v\n%s", err, out)
	}
	named := csvImages(t, filepath.Join(copyDir, "bundle/manifests/echo-operator.clusterserviceversion.yaml"))
	seen := map[string]bool{}
	for what, image := range named {
		name, digest, _ := strings.Cut(image, "@")
		if want[name] == "" || digest != want[name] {
			t.Errorf("%s is %s, want an image of the registry by the digest pushed (%v)", what, image, want)
		}
		seen[name] = true
	}
	for _, what := range []string{"containerImage", "container manager", "RELATED_IMAGE_ECHO", "RELATED_IMAGE_OPERATOR"} {
		if named[what] == "" {
			t.Errorf("the CSV has no %s", what)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("the CSV names %v, want both images of %v", seen, want)
	}

	// With the registry gone, the digests cannot be read: make bundle fails.
	stopped = true
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	if out, err := bundleWithDigests(ctx, copyDir, reg.Host+"/echo", localbin); err == nil || !strings.Contains(string(out), "error resolving image") {
		t.Errorf("make bundle USE_IMAGE_DIGESTS=true with no registry: %v, want it to fail resolving an image:\n%s", err, out)
	}
}

// csvImages is every image the CSV at path names, by where it names it:
// containerImage, each container's image and RELATED_IMAGE_* variables,
// and relatedImages.
func csvImages(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec struct {
							Template struct {
								Spec corev1.PodSpec `json:"spec"`
							} `json:"template"`
						} `json:"spec"`
					} `json:"deployments"`
				} `json:"spec"`
			} `json:"install"`
			RelatedImages []struct {
				Name  string `json:"name"`
				Image string `json:"image"`
			} `json:"relatedImages"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &csv); err != nil {
		t.Fatal(err)
	}
	named := map[string]string{"containerImage": csv.Metadata.Annotations["containerImage"]}
	for _, d := range csv.Spec.Install.Spec.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			named["container "+c.Name] = c.Image
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
					named[e.Name] = e.Value
				}
			}
		}
	}
	for _, r := range csv.Spec.RelatedImages {
		named["relatedImages "+r.Name] = r.Image
	}
	return named
}

// bundleWithDigests runs make bundle USE_IMAGE_DIGESTS=true in dir, with
// the images of registry and the tools of localbin.
func bundleWithDigests(ctx context.Context, dir, registry, localbin string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "bundle", "USE_IMAGE_DIGESTS=true",
		"IMAGE_REGISTRY="+registry, "LOCALBIN="+localbin)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// pushImage pushes an image of no layers, its configuration naming repo,
// as repo:tag through the registry's HTTP API, and returns its digest.
func pushImage(ctx context.Context, t *testing.T, host, repo, tag string) string {
	t.Helper()
	config := fmt.Appendf(nil, `{"architecture":"amd64","os":"linux","config":{"Labels":{"repo":%q}},"rootfs":{"type":"layers","diff_ids":[]}}`, repo)
	configDigest := sha256Digest(config)
	resp := do(ctx, t, http.MethodPost, "http://"+host+"/v2/"+repo+"/blobs/uploads/", "", nil, http.StatusAccepted)
	upload := resp.Header.Get("Location")
	if strings.HasPrefix(upload, "/") {
		upload = "http://" + host + upload
	}
	sep := "?"
	if strings.Contains(upload, "?") {
		sep = "&"
	}
	do(ctx, t, http.MethodPut, upload+sep+"digest="+configDigest, "application/octet-stream", config, http.StatusCreated)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "layers": []any{},
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": configDigest, "size": len(config)},
	})
	if err != nil {
		t.Fatal(err)
	}
	do(ctx, t, http.MethodPut, "http://"+host+"/v2/"+repo+"/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json", manifest, http.StatusCreated)
	return sha256Digest(manifest)
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func do(ctx context.Context, t *testing.T, method, url, contentType string, body []byte, status int) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %s, want %d", method, url, resp.Status, status)
	}
	return resp
}

// copyRepo copies the repository's files, those git tracks or would
// (changes included, bin/ and what .gitignore names left out), into a
// temporary directory, for make to change there.
func copyRepo(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("listing the repository's files with git: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted, or a link
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
