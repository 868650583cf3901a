package e2enode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/localcluster"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// operatorNamespace is where `make deploy` puts the operator
// (config/default's namespace).
const operatorNamespace = "echo-operator-system"

// setUpTimeout bounds the suite's set-up; a cold build of the images takes
// most of it on a fresh machine.
const setUpTimeout = 25 * time.Minute

var (
	repoRoot   string
	kubectlBin string
	cluster    *localcluster.Cluster
	builder    *imagebuild.Env
	workDir    string
	k8sClient  client.Client
	clientset  *kubernetes.Clientset
	// The images built from the Dockerfile, in builder's registry.
	operatorImage, echoServerImage string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(localcluster.RunSuite(m, suiteName, skipReason(), setUp, tearDown))
}

// suiteName names the suite in its messages.
const suiteName = "real-node suite"

// skipReason says why the suite cannot run here, or is "".
func skipReason() string {
	return localcluster.SkipReason(testing.Short())
}

// setUp builds the images from the Dockerfile into a registry on loopback,
// starts a local cluster whose node pulls from it, and deploys the
// operator.
func setUp() (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), setUpTimeout)
	defer cancel()
	if repoRoot, workDir, err = localcluster.SuiteDirs("echo-e2enode-"); err != nil {
		return err
	}
	if err := buildImages(ctx); err != nil {
		return err
	}
	bins, err := localcluster.LocateBinaries(repoRoot)
	if err != nil {
		return err
	}
	kubectlBin = bins.Cluster.Kubectl
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		Node: realnode.Options{Binaries: bins.Node, Root: filepath.Join(workDir, "node"),
			HTTPRegistries: []string{builder.Registry.Host}, ClusterServices: true},
		Cluster: simcluster.Options{Binaries: bins.Cluster, WorkDir: filepath.Join(workDir, "cluster")},
		Builder: builder,
	})
	if err != nil {
		return err
	}
	if k8sClient, err = client.New(cluster.Config(), client.Options{Scheme: app.NewScheme()}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(cluster.Config()); err != nil {
		return err
	}
	return deployOperator()
}

// tearDown stops what setUp started. After a failure the work directory
// stays, with the logs of the cluster, the node and the builds.
func tearDown(failed bool) {
	var errs []error
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
