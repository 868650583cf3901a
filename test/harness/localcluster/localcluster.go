package localcluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// Options configure a local cluster.
type Options struct {
	// Node configures the real node; its networks are filled in.
	Node realnode.Options
	// Cluster configures the control plane; its address and node options
	// are filled in.
	Cluster simcluster.Options
	// Builder, when set, builds the node's own images (pause, CoreDNS,
	// local-path-provisioner, busybox) from their Dockerfile; without it
	// the node writes the same images from the same binaries.
	Builder *imagebuild.Env
}

// Cluster is a running control plane with one real node.
type Cluster struct {
	*simcluster.Cluster
	Node *realnode.Node
}

// Start brings up the node's network, starts the control plane on the
// node's address, where pods reach it through the "kubernetes" Service,
// with the aggregator dialing extension servers at their endpoints (the
// host cannot reach cluster IPs), and joins the node. On error, what
// started is stopped.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	// The pods are the real node's alone: their range is its bridge's. The
	// simulated cluster's wide pod range, for fake nodes, is not routed
	// away from the host, which may have addresses there (its resolver).
	o.Node.PodNetwork, o.Node.ServiceNetwork = realnode.PodCIDR, simcluster.ServiceNetwork
	if o.Builder != nil {
		root, err := reporoot.Find()
		if err != nil {
			return nil, err
		}
		if o.Node.ImageArchives, err = o.Builder.BuildNodeImages(ctx, root, o.Node.NodeImages()); err != nil {
			return nil, fmt.Errorf("building the node's images: %w", err)
		}
	}
	node, err := realnode.Prepare(o.Node)
	if err != nil {
		return nil, fmt.Errorf("preparing the real node: %w", err)
	}
	o.Cluster.ServeAddress, o.Cluster.NoFakeNodes, o.Cluster.AggregatorRouting = realnode.NodeIP, true, true
	cp, err := simcluster.Start(ctx, o.Cluster)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting the control plane: %w", err), node.Stop())
	}
	if err := node.Join(ctx, cp.KubeconfigPath()); err != nil {
		return nil, errors.Join(fmt.Errorf("joining the real node: %w", err), node.Stop(), cp.Stop())
	}
	return &Cluster{Cluster: cp, Node: node}, nil
}

// Stop stops the control plane, then the node.
func (c *Cluster) Stop() error {
	return errors.Join(c.Cluster.Stop(), c.Node.Stop())
}
