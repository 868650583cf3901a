package simcluster

import (
	"context"
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeName is the name of the i-th fake node.
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// fakeNode builds the i-th node. Its status is kept on create, and KWOK's
// node-initialize stage keeps the given capacity and addresses.
func fakeNode(i int) *corev1.Node {
	name := nodeName(i)
	// Pod CIDRs of /22 (1022 pod IPs) from PodNetwork, one per node, so
	// that KWOK's pod IPs are unique across nodes.
	off := i * 1024
	podCIDR := fmt.Sprintf("10.%d.%d.0/22", 128+(off>>16), (off>>8)&0xff)
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourcePods:             resource.MustParse("1000"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"type":                          "kwok",
				"kubernetes.io/hostname":        name,
				"kubernetes.io/os":              "linux",
				"kubernetes.io/arch":            runtime.GOARCH,
				"topology.kubernetes.io/region": "region-1",
				"topology.kubernetes.io/zone":   fmt.Sprintf("zone-%c", 'a'+i%3),
			},
		},
		// No taints: with the node-lifecycle controller off nothing would
		// ever remove a not-ready taint.
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("172.18.%d.%d", i/250, i%250+2)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

func (c *Cluster) createObjects(ctx context.Context) error {
	if c.opts.Nodes > 8000 {
		return fmt.Errorf("at most 8000 nodes, not %d", c.opts.Nodes)
	}
	for i := range c.opts.Nodes {
		if _, err := c.client.CoreV1().Nodes().Create(ctx, fakeNode(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", nodeName(i), err)
		}
	}
	if !c.opts.DefaultStorageClass {
		return nil
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       KwokVolumeProvisioner,
		ReclaimPolicy:     &reclaim,
		VolumeBindingMode: &binding,
	}
	if _, err := c.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating StorageClass %s: %w", StorageClassName, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
