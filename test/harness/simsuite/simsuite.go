package simsuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/test/harness/managerbin"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// startTimeout bounds building the manager and starting the cluster.
const startTimeout = 5 * time.Minute

// Env is a suite's simulated cluster and manager binary.
type Env struct {
	// RepoRoot is the repository's root directory.
	RepoRoot string
	// WorkDir holds the manager binary and the cluster's logs
	// (<WorkDir>/cluster/<component>.log); Stop removes it.
	WorkDir string
	// Manager is the manager binary built from this tree.
	Manager string
	// Binaries are the simulated cluster's binaries, kubectl included.
	Binaries simcluster.Binaries
	// Cluster is the running simulated cluster.
	Cluster *simcluster.Cluster
	// Config, Client and Clientset reach it as its administrator.
	Config    *rest.Config
	Client    client.Client
	Clientset *kubernetes.Clientset
}

// Start builds the manager and starts a simulated cluster for a suite in
// test/<suite>. opts gives the cluster's shape; its binaries, CRDs and work
// directory are filled in. The namespace operatorNamespace is created. On
// error, what was started is stopped.
func Start(suite, operatorNamespace string, opts simcluster.Options) (_ *Env, err error) {
	e := &Env{}
	if e.RepoRoot, err = reporoot.Find(); err != nil {
		return nil, err
	}
	if e.Binaries, err = simcluster.LocateBinaries(e.RepoRoot); err != nil {
		return nil, err
	}
	if e.WorkDir, err = os.MkdirTemp("", "echo-"+suite+"-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// The work directory goes with Stop: show why the cluster
			// did not start first.
			for _, component := range []string{"etcd", "kube-apiserver"} {
				DumpLog(filepath.Join(e.WorkDir, "cluster", component+".log"), 4000)
			}
			e.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if e.Manager, err = managerbin.Build(ctx, e.RepoRoot, e.WorkDir); err != nil {
		return nil, err
	}
	opts.Binaries = e.Binaries
	opts.CRDDirectoryPaths = []string{filepath.Join(e.RepoRoot, "config", "crd", "bases")}
	opts.WorkDir = filepath.Join(e.WorkDir, "cluster")
	if e.Cluster, err = simcluster.Start(ctx, opts); err != nil {
		return nil, fmt.Errorf("starting the simulated cluster: %w", err)
	}
	e.Config = e.Cluster.Config()
	if e.Client, err = client.New(e.Config, client.Options{Scheme: app.NewScheme()}); err != nil {
		return nil, err
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", operatorNamespace, err)
	}
	return e, nil
}

// Stop stops the cluster and removes the work directory.
func (e *Env) Stop() {
	if e.Cluster != nil {
		if err := e.Cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the simulated cluster:", err)
		}
	}
	_ = os.RemoveAll(e.WorkDir)
}

// DumpLog prints the last tail bytes of a log file to stderr.
func DumpLog(path string, tail int) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(raw) > tail {
		raw = raw[len(raw)-tail:]
	}
	fmt.Fprintf(os.Stderr, "---- last lines of %s ----\n%s\n", path, raw)
}
