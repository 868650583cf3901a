package olmnode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/localcluster"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// setUpTimeout bounds the suite's set-up: building the images (most of it
// on a fresh machine), starting the cluster and installing OLM.
const setUpTimeout = 25 * time.Minute

var (
	repoRoot  string
	workDir   string
	builder   *imagebuild.Env
	cluster   *localcluster.Cluster
	kubectl   clusteruser.Kubectl
	k8sClient client.Client
	clientset *kubernetes.Clientset
	images    suiteImages
	// front serves the builder's registry over HTTPS on the node's bridge,
	// as a registry of the cluster's network does.
	front *imagebuild.TLSFront
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(localcluster.RunSuite(m, suiteName, skipReason(), setUp, tearDown))
}

// suiteName names the suite in its messages.
const suiteName = "OLM real-node suite"

// skipReason says why the suite cannot run here, or is "".
func skipReason() string {
	return localcluster.SkipReason(testing.Short(),
		func() error { _, err := imagebuild.LocateOLMSources(); return err },
		func() error { _, err := imagebuild.LocateOLMv1Sources(); return err })
}

// setUp builds the images, starts a local cluster whose node pulls them
// from the builder's registry, and installs OLM on it.
func setUp() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), setUpTimeout)
	defer cancel()
	if repoRoot, workDir, err = localcluster.SuiteDirs("echo-olmnode-"); err != nil {
		return err
	}
	if err := buildImages(ctx); err != nil {
		return err
	}
	bins, err := localcluster.LocateBinaries(repoRoot)
	if err != nil {
		return err
	}
	if front, err = builder.Registry.NewTLSFront(net.JoinHostPort(realnode.NodeIP, "5443"), filepath.Join(workDir, "front")); err != nil {
		return err
	}
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		Node: realnode.Options{Binaries: bins.Node, Root: filepath.Join(workDir, "node"), ClusterServices: true,
			HTTPRegistries: []string{builder.Registry.Host}, Mirror: builder.Registry.Host,
			TLSRegistries: map[string]string{front.Host: front.CAFile}},
		Cluster: simcluster.Options{Binaries: bins.Cluster, WorkDir: filepath.Join(workDir, "cluster")},
		Builder: builder,
	})
	if err != nil {
		return err
	}
	// The node's bridge holds its address now.
	if err := front.Serve(); err != nil {
		return err
	}
	// Relative paths in the commands start at the repository's root, as in
	// the documentation.
	kubectl = clusteruser.Kubectl{Bin: bins.Cluster.Kubectl, Kubeconfig: cluster.KubeconfigPath(), Dir: repoRoot}
	if k8sClient, err = client.New(cluster.Config(), client.Options{Scheme: app.NewScheme()}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(cluster.Config()); err != nil {
		return err
	}
	return installOLM(ctx)
}

// tearDown stops what setUp started. After a failure the work directory
// stays, with the logs of the cluster, the node and the builds.
func tearDown(failed bool) {
	errs := []error{front.Stop()}
	if cluster != nil {
		errs = append(errs, cluster.Stop())
	}
	if builder != nil {
		errs = append(errs, builder.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "tearing down the "+suiteName+":", err)
	}
	localcluster.KeepLogsOnFailure(suiteName, workDir, failed)
}
