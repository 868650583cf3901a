package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// csv is what the checks below read of the bundle's ClusterServiceVersion.
type csv struct {
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Install struct {
			Spec struct {
				Deployments []struct {
					Spec appsv1.DeploymentSpec `json:"spec"`
				} `json:"deployments"`
				ClusterPermissions []struct {
					Rules []rbacv1.PolicyRule `json:"rules"`
				} `json:"clusterPermissions"`
			} `json:"spec"`
		} `json:"install"`
		RelatedImages []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"relatedImages"`
	} `json:"spec"`
}

const csvPath = "bundle/manifests/echo-operator.clusterserviceversion.yaml"

func readCSV(t *testing.T, root string) csv {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, csvPath))
	if err != nil {
		t.Fatal(err)
	}
	var c csv
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", csvPath, err)
	}
	if len(c.Spec.Install.Spec.Deployments) == 0 {
		t.Fatalf("%s has no deployment: the checks would pass vacuously", csvPath)
	}
	return c
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// featurePrefix is that of the annotations OpenShift's console and its
// certification read.
const featurePrefix = "features.operators.openshift.io/"

// TestCSVFeaturesAreTrue checks each feature annotation of the CSV (which
// `make bundle` takes from config/manifests' base CSV) against what the
// operator does: its value must be the fact, and an annotation no check
// here covers fails, as does one missing.
func TestCSVFeaturesAreTrue(t *testing.T) {
	root := reporoot.Must(t)
	c := readCSV(t, root)
	facts := map[string]struct {
		value string
		fact  func(t *testing.T)
	}{
		// The data mover pods get the cluster's proxy settings, which OLM
		// sets on the manager's Deployment.
		"proxy-aware": {"true", func(t *testing.T) {
			t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
			if env := moverEnv(); !slices.Contains(env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy.example:3128"}) {
				t.Errorf("the mover's environment %v lacks the proxy", env)
			}
		}},
		// relatedImages names every image the operator runs, for mirrors
		// to copy, and the chart it installs is in its image (a path of
		// watches.yaml): nothing is fetched from outside the cluster.
		"disconnected": {"true", func(t *testing.T) { disconnected(t, root, c) }},
		// Backups reach S3 with a ServiceAccount token exchanged at STS
		// (AssumeRoleWithWebIdentity), no long-lived keys.
		"token-auth-aws": {"true", func(t *testing.T) {
			identity, ok := reflect.TypeFor[echov1alpha1.S3Storage]().FieldByName("Identity")
			if !ok || identity.Type.Elem() != reflect.TypeFor[echov1alpha1.S3Identity]() {
				t.Error("S3 storage has no workload identity")
			}
			if _, ok := reflect.TypeFor[echov1alpha1.S3Identity]().FieldByName("RoleARN"); !ok ||
				moverprotocol.EnvWebIdentityTokenFile != "AWS_WEB_IDENTITY_TOKEN_FILE" {
				t.Error("the mover does not take a role's web identity token as AWS's SDKs do")
			}
		}},
		// The storage is S3 (or a claim): no Azure Blob or Google Cloud
		// Storage API, so no Azure or GCP token either.
		"token-auth-azure": {"false", func(t *testing.T) { storageIsS3OrClaim(t) }},
		"token-auth-gcp":   {"false", func(t *testing.T) { storageIsS3OrClaim(t) }},
		// Static Go binaries (CGO_ENABLED=0) of Go's own crypto, not built in
		// its FIPS mode: no validated module of the platform is used.
		"fips-compliant": {"false", func(t *testing.T) {
			dockerfile := readFile(t, root, "Dockerfile")
			if !strings.Contains(dockerfile, "CGO_ENABLED=0") || strings.Contains(dockerfile, "GOFIPS140") || strings.Contains(dockerfile, "boringcrypto") {
				t.Error("the Dockerfile's build changed its crypto: review fips-compliant")
			}
		}},
		// The operator reads no OpenShift TLS security profile: its API is
		// not even a dependency.
		"tls-profiles": {"false", func(t *testing.T) {
			if strings.Contains(readFile(t, root, "go.mod"), "github.com/openshift/api") {
				t.Error("go.mod requires github.com/openshift/api: review tls-profiles")
			}
		}},
		// No network function, CNI plugin or CSI driver: no host network,
		// no rights on network attachments or CSI drivers.
		"cnf": {"false", func(t *testing.T) { noHostPlugins(t, c) }},
		"cni": {"false", func(t *testing.T) { noHostPlugins(t, c) }},
		"csi": {"false", func(t *testing.T) { noHostPlugins(t, c) }},
	}
	for name := range c.Metadata.Annotations {
		if feature, ok := strings.CutPrefix(name, featurePrefix); ok {
			if _, checked := facts[feature]; !checked {
				t.Errorf("%s: no check here says whether it is true", name)
			}
		}
	}
	for feature, f := range facts {
		t.Run(feature, func(t *testing.T) {
			if got := c.Metadata.Annotations[featurePrefix+feature]; got != f.value {
				t.Errorf("%s%s is %q, want %q", featurePrefix, feature, got, f.value)
			}
			f.fact(t)
		})
	}
}

func disconnected(t *testing.T, root string, c csv) {
	related := map[string]bool{}
	for _, r := range c.Spec.RelatedImages {
		related[r.Image] = true
	}
	for _, d := range c.Spec.Install.Spec.Deployments {
		for _, ctr := range slices.Concat(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers) {
			images := []string{ctr.Image}
			for _, e := range ctr.Env {
				if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
					images = append(images, e.Value)
				}
			}
			for _, image := range images {
				if !related[image] {
					t.Errorf("container %s runs %s, which relatedImages lacks", ctr.Name, image)
				}
			}
		}
	}
	for _, chart := range regexp.MustCompile(`(?m)^\s*chart:\s*(\S+)`).FindAllStringSubmatch(readFile(t, root, "watches.yaml"), -1) {
		if _, err := os.Stat(filepath.Join(root, chart[1], "Chart.yaml")); err != nil || strings.Contains(chart[1], "://") {
			t.Errorf("watches.yaml's chart %s is not a chart of the image: %v", chart[1], err)
		}
	}
}

func storageIsS3OrClaim(t *testing.T) {
	storage := reflect.TypeFor[echov1alpha1.BackupStorage]()
	var fields []string
	for i := range storage.NumField() {
		fields = append(fields, storage.Field(i).Name)
	}
	if !slices.Equal(fields, []string{"S3", "PersistentVolumeClaim", "LocationRef"}) {
		t.Errorf("the backup storage offers %v: review token-auth-azure and token-auth-gcp", fields)
	}
}

func noHostPlugins(t *testing.T, c csv) {
	for _, d := range c.Spec.Install.Spec.Deployments {
		if d.Spec.Template.Spec.HostNetwork {
			t.Error("the operator runs on the host's network")
		}
	}
	for _, p := range c.Spec.Install.Spec.ClusterPermissions {
		for _, r := range p.Rules {
			for _, g := range r.APIGroups {
				if g == "k8s.cni.cncf.io" || (g == "storage.k8s.io" && slices.Contains(r.Resources, "csidrivers")) {
					t.Errorf("the operator may manage %s %v", g, r.Resources)
				}
			}
		}
	}
}

// TestCSVNamesItsPlatformsAndNamespace: the CSV's architecture labels are
// the platforms `make docker-buildx` builds (PLATFORMS), and the namespace
// it suggests is that of `make deploy` (config/base, under config/default).
func TestCSVNamesItsPlatformsAndNamespace(t *testing.T) {
	root := reporoot.Must(t)
	c := readCSV(t, root)
	platforms := regexp.MustCompile(`(?m)^PLATFORMS \?= (\S+)$`).FindStringSubmatch(readFile(t, root, "Makefile"))
	if platforms == nil {
		t.Fatal("the Makefile sets no PLATFORMS")
	}
	want := map[string]string{}
	for _, p := range strings.Split(platforms[1], ",") {
		goos, arch, _ := strings.Cut(p, "/")
		want["operatorframework.io/os."+goos] = "supported"
		want["operatorframework.io/arch."+arch] = "supported"
	}
	got := map[string]string{}
	for k, v := range c.Metadata.Labels {
		if strings.HasPrefix(k, "operatorframework.io/os.") || strings.HasPrefix(k, "operatorframework.io/arch.") {
			got[k] = v
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the CSV's platform labels are %v, want %v (PLATFORMS %s)", got, want, platforms[1])
	}
	ns := regexp.MustCompile(`(?m)^namespace: (\S+)$`).FindStringSubmatch(readFile(t, root, "config/base/kustomization.yaml"))
	if ns == nil || c.Metadata.Annotations["operatorframework.io/suggested-namespace"] != ns[1] {
		t.Errorf("suggested-namespace %q, want that of make deploy (config/base) %v", c.Metadata.Annotations["operatorframework.io/suggested-namespace"], ns)
	}
}
