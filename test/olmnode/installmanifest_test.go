package olmnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// manifestNamespace is the operator's namespace in dist/install.yaml.
	manifestNamespace = "echo-operator-system"
	// buildInstallerTimeout bounds `make build-installer`: controller-gen
	// and kustomize.
	buildInstallerTimeout = 10 * time.Minute
)

// TestInstallManifest writes the install manifest with `make
// build-installer` for the images built here, named by digest, then
// follows docs/install.md: `kubectl apply --server-side` of it, the
// operator's rollout, the sample Echo answering over HTTP from pods of the
// echo server's image by digest and the live API serving; then, once the
// Echo is gone, `kubectl delete --ignore-not-found -f` of it (the garbage
// collector may delete the APIService first, with its owner ClusterRole)
// leaves none of its objects (the CRDs, the ClusterRoles and bindings,
// the APIService, the namespace, whose deletion completes) and a
// namespace deleted afterwards goes too.
func TestInstallManifest(t *testing.T) {
	const ns, team = manifestNamespace, "manifest-team"
	explainOnFailure(t, ns, team)
	operatorImage, echoImage := imageByDigest(t, "operator"), imageByDigest(t, "echo-server")
	manifest := buildInstaller(t, operatorImage, echoImage)
	objects := manifestObjects(t, manifest)

	runDocumented(t, documented("apply", "--server-side", "-f", "dist/install.yaml").With("dist/install.yaml", manifest))
	runDocumented(t, documented("rollout", "status", "-n", "echo-operator-system",
		"deployment/echo-operator-controller-manager", "--timeout=5m"))
	if got := run(t, "get", "deployment", managerDeployment, "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].image}"); got != operatorImage {
		t.Fatalf("the manager runs %s, want %s", got, operatorImage)
	}

	run(t, "create", "namespace", team)
	run(t, "apply", "-n", team, "-f", "config/samples/echo_v1alpha1_echo.yaml")
	waitEchoReady(t, team, 2)
	checkEchoAnswers(t, team, echoImage, "Hello from "+sample)
	// The live API's APIService of the manifest serves once the manager
	// has issued its certificate and set its caBundle.
	must(t, poll(context.Background(), installTimeout, "the live API's echorevisions", func(context.Context) (bool, string, error) {
		out, err := kubectl.Run("get", "echorevisions", "-n", team)
		return err == nil && strings.Contains(out, sample), out, nil
	}))

	t.Run("uninstall", func(t *testing.T) {
		run(t, "delete", "-n", team, "echo/"+sample, "--timeout=180s")
		runDocumented(t, documented("delete", "--ignore-not-found", "-f", "dist/install.yaml").With("dist/install.yaml", manifest))
		checkNoneLeft(t, objects)
		checkNoLiveAPIService(t)
		run(t, "delete", "namespace", team, "--timeout=180s")
		checkNothingLeft(t, team)
	})
}

// imageByDigest is the reference by digest, in the builder's registry, of
// the project's image of the Dockerfile's stage target.
func imageByDigest(t *testing.T, target string) string {
	t.Helper()
	for _, img := range images.Project {
		if img.Target == target && img.Digest != "" {
			return builder.Registry.Host + "/" + img.Repo + "@" + img.Digest
		}
	}
	t.Fatalf("no image of the stage %s with a digest among %+v", target, images.Project)
	return ""
}

// buildInstaller runs `make build-installer` for the images in a scratch
// tree that shares the repository's files but for config/, which it
// copies, and dist/, so that neither of the repository's changes, and
// returns the path of the manifest it wrote, after checking that it names
// the images and no other.
func buildInstaller(t *testing.T, operatorImage, echoImage string) string {
	t.Helper()
	tree := scratchTree(t)
	ctx, cancel := context.WithTimeout(context.Background(), buildInstallerTimeout)
	defer cancel()
	mk := exec.CommandContext(ctx, "make", "--no-print-directory", "build-installer", "IMG="+operatorImage, "ECHO_IMG="+echoImage)
	mk.Dir = tree
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build-installer: %v\n%s", err, out)
	}
	manifest := filepath.Join(tree, "dist", "install.yaml")
	raw, err := os.ReadFile(manifest)
	must(t, err)
	for _, want := range []string{"image: " + operatorImage, "value: " + echoImage, "value: " + operatorImage} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %q", manifest, want)
		}
	}
	if strings.Contains(string(raw), "quay.io/") {
		t.Errorf("%s still names an image by its release tag", manifest)
	}
	return manifest
}

// scratchTree links the repository's files into a temporary directory, but
// for config/, which it copies, and .git and dist/, which it leaves out.
func scratchTree(t *testing.T) string {
	t.Helper()
	tree := t.TempDir()
	entries, err := os.ReadDir(repoRoot)
	must(t, err)
	for _, e := range entries {
		switch name := e.Name(); name {
		case ".git", "dist":
		case "config":
			must(t, os.CopyFS(filepath.Join(tree, name), os.DirFS(filepath.Join(repoRoot, name))))
		default:
			must(t, os.Symlink(filepath.Join(repoRoot, name), filepath.Join(tree, name)))
		}
	}
	return tree
}

// manifestObject is an object of the install manifest.
type manifestObject struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (o manifestObject) String() string {
	return strings.TrimPrefix(fmt.Sprintf("%s %s/%s", o.gvk.Kind, o.namespace, o.name), "/")
}

// manifestObjects are the objects of the manifest file, which must hold
// the kinds an install needs.
func manifestObjects(t *testing.T, file string) []manifestObject {
	t.Helper()
	docs, err := readBlobs(file)
	must(t, err)
	var objects []manifestObject
	kinds := map[string]int{}
	for _, d := range docs {
		u := unstructured.Unstructured{Object: d}
		objects = append(objects, manifestObject{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
		kinds[u.GetKind()]++
	}
	for kind, want := range map[string]int{"Namespace": 1, "CustomResourceDefinition": 5, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Deployment": 1, "Service": 1, "APIService": 1} {
		if kinds[kind] < want {
			t.Fatalf("%s holds %d objects of kind %s, want at least %d (kinds: %v)", file, kinds[kind], kind, want, kinds)
		}
	}
	return objects
}

// checkNoneLeft waits until no object of the manifest is left.
func checkNoneLeft(t *testing.T, objects []manifestObject) {
	t.Helper()
	must(t, poll(context.Background(), installTimeout, "no object of the install manifest after its deletion", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, o := range objects {
			obj, err := get(ctx, o.gvk, o.namespace, o.name)
			if err != nil {
				return false, "", err
			}
			if obj != nil {
				left = append(left, o.String())
			}
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	}))
}

// checkEchoAnswers checks that every running pod of the sample Echo in
// namespace runs image and answers message over HTTP, asked from the node,
// which reaches the pods on its bridge as the kubelet's probes do.
func checkEchoAnswers(t *testing.T, namespace, image, message string) {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + sample})
	must(t, err)
	answered := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		c := p.Spec.Containers[0]
		if c.Image != image {
			t.Errorf("pod %s runs %s, want %s", p.Name, c.Image, image)
		}
		url := "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(httpPort(c)))) + "/manifest"
		body, err := httpGetBody(url)
		if err != nil || !strings.Contains(body, `"message":"`+message+`"`) {
			t.Errorf("GET %s: %v %s", url, err, body)
		}
		answered++
	}
	if answered == 0 {
		t.Fatalf("no running pod of %s in %s:\n%s", sample, namespace, describePods(namespace))
	}
}

// httpPort is the port named http of the container c.
func httpPort(c corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Name == "http" {
			return p.ContainerPort
		}
	}
	return 0
}

// httpGetBody gets url and returns its body, or an error unless it
// answers 200.
func httpGetBody(url string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return string(body), err
}
