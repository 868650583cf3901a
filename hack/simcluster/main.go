package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// stringList is a flag that may be repeated and takes comma-separated values.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func main() {
	run := run
	if len(os.Args) > 1 && os.Args[1] == "forward" {
		run = func() error { return runForward(os.Args[2:]) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "simcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	// A flag set of its own: controller-runtime registers its own
	// --kubeconfig on the global one.
	fs := flag.NewFlagSet("simcluster", flag.ExitOnError)
	var (
		kubeconfig   = fs.String("kubeconfig", "bin/simcluster/kubeconfig", "where to write the admin kubeconfig")
		crds         stringList
		nodes        = fs.Int("nodes", 1, "number of fake nodes")
		workDir      = fs.String("work-dir", "", "directory for component logs and state (default: the kubeconfig's directory)")
		repoRoot     = fs.String("repo-root", "", "repository root holding hack/build-control-plane.sh (default: found from the working directory)")
		storageClass = fs.Bool("storage-class", true, `create the default StorageClass "standard" whose claims KWOK binds`)
		realNode     = fs.Bool("real-node", false, "run a real node instead of fake ones (root on Linux): containers run, and the project's images are built from the Dockerfile into a registry on loopback that it pulls from")
		imagesEnv    = fs.String("images-env", "", "with --real-node, write the built images' references to this file (OPERATOR_IMAGE=..., ECHO_IMAGE=...)")
		verbose      = fs.Bool("v", false, "also copy component logs to stderr")
	)
	fs.Var(&crds, "crds", "CRD directory or file to install (repeatable, comma-separated; optional)")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}

	kubeconfigPath, err := filepath.Abs(*kubeconfig)
	if err != nil {
		return err
	}
	if err := checkOverwrite(kubeconfigPath); err != nil {
		return err
	}
	if *workDir == "" {
		*workDir = filepath.Dir(kubeconfigPath)
	}

	bins, err := simcluster.LocateBinaries(*repoRoot)
	if err != nil {
		return err
	}
	opts := simcluster.Options{
		Binaries:            bins,
		CRDDirectoryPaths:   crds,
		Nodes:               *nodes,
		WorkDir:             *workDir,
		DefaultStorageClass: *storageClass,
	}
	if *verbose {
		opts.Stdout = os.Stderr
	}

	// The first signal stops the cluster; those during its teardown do not
	// cut it short (onStopSignals).
	ctx, releaseSignals := onStopSignals(stopGrace, os.Stderr, os.Exit)
	defer releaseSignals()

	begin := time.Now()
	var cluster interface {
		KubeconfigPath() string
		WorkDir() string
		Stop() error
	}
	nodeKind := "fake"
	if *realNode {
		cluster, err = startRealNode(ctx, opts, *imagesEnv)
		nodeKind, *nodes = "real", 1
	} else {
		cluster, err = simcluster.Start(ctx, opts)
	}
	if err != nil {
		return err
	}
	err = copyFile(cluster.KubeconfigPath(), kubeconfigPath)
	if err == nil {
		fmt.Printf("simcluster ready in %s: %d %s node(s); export KUBECONFIG=%s (logs in %s)\n",
			time.Since(begin).Round(100*time.Millisecond), *nodes, nodeKind, kubeconfigPath, cluster.WorkDir())
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "simcluster: stopping")
	}
	stopErr := cluster.Stop()
	_ = os.Remove(kubeconfigPath)
	return errors.Join(err, stopErr)
}

// checkOverwrite refuses to replace a kubeconfig this command did not write.
func checkOverwrite(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil || cfg.CurrentContext != "simcluster" {
		return fmt.Errorf("refusing to overwrite %s: it is not a kubeconfig written by simcluster", path)
	}
	return nil
}

func copyFile(from, to string) (err error) {
	if from == to {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := in.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
