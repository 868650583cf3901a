package realnode

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cluster's services (Options.ClusterServices) and their images
// (NodeImages), imported as the pause image is.
const (
	// ClusterDomain is the cluster's DNS domain, the kubelet's clusterDomain.
	ClusterDomain = "cluster.local"
	// ClusterDNSIP is the cluster IP of the kube-dns Service in
	// kube-system, the kubelet's clusterDNS: the tenth of ServiceNetwork.
	ClusterDNSIP = "10.96.0.10"
	// StorageNamespace runs local-path-provisioner and its helper pods.
	StorageNamespace = "local-path-storage"
	// StorageClass is the default StorageClass, of local-path-provisioner.
	StorageClass = "local-path"

	CoreDNSImage     = "localhost/echo-realnode/coredns:latest"
	ProvisionerImage = "localhost/echo-realnode/local-path-provisioner:latest"
	// HelperImage is Debian's static busybox, as sh, mkdir and rm: the
	// image of local-path-provisioner's helper pods.
	HelperImage = "localhost/echo-realnode/busybox:latest"

	// dnsPort is CoreDNS's port in its pod: unprivileged, so it runs as
	// non-root without capabilities; the Service maps 53 to it.
	dnsPort = 1053
	// nonRoot is the user of the images of the services.
	nonRoot = "65532:65532"
)

//go:embed manifests/services.yaml
var servicesManifest string

// VolumeDir is where local-path-provisioner keeps the node's volumes,
// under Root: a stop removes them with the rest.
func (n *Node) VolumeDir() string { return n.path("local-path") }

// checkClusterServices says why the options cannot run the services.
func (o *Options) checkClusterServices() error {
	if err := o.checkServiceBinaries(); err != nil {
		return err
	}
	_, network, err := net.ParseCIDR(o.ServiceNetwork)
	if err != nil {
		return fmt.Errorf("the service network %q: %w", o.ServiceNetwork, err)
	}
	if !network.Contains(net.ParseIP(ClusterDNSIP)) {
		return fmt.Errorf("the service network %s does not hold the DNS Service's address %s", o.ServiceNetwork, ClusterDNSIP)
	}
	return nil
}

// renderServices renders the manifest of the cluster's services.
func (n *Node) renderServices() ([]byte, error) {
	tmpl, err := template.New("services").Funcs(template.FuncMap{
		"indent": func(spaces int, s string) string {
			pad := strings.Repeat(" ", spaces)
			return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad)
		},
	}).Option("missingkey=error").Parse(servicesManifest)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, map[string]any{
		"ClusterDomain": ClusterDomain, "DNSPort": dnsPort, "DNSIP": ClusterDNSIP,
		"NodeName": NodeName, "CoreDNSImage": CoreDNSImage, "ProvisionerImage": ProvisionerImage,
		"HelperImage": HelperImage, "StorageNamespace": StorageNamespace, "StorageClass": StorageClass,
		"VolumeDir": n.VolumeDir(),
	})
	return out.Bytes(), err
}

// createServices creates the objects of the cluster's services; those that
// exist already (from an earlier node of the same cluster) are left.
func (n *Node) createServices(ctx context.Context) error {
	manifest, err := n.renderServices()
	if err != nil {
		return fmt.Errorf("rendering the cluster's services: %w", err)
	}
	cfg, err := restConfig(n.opts.Kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	decode := scheme.Codecs.UniversalDeserializer().Decode
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if onlyComments(doc) {
			continue
		}
		obj, gvk, err := decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("decoding the cluster's services: %w", err)
		}
		o, ok := obj.(client.Object)
		if !ok {
			return fmt.Errorf("%s is not an object", gvk)
		}
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// waitServices waits until CoreDNS is Ready and local-path-provisioner
// runs, on this node.
func (n *Node) waitServices(ctx context.Context) error {
	cs, err := clientFor(n.opts.Kubeconfig)
	if err != nil {
		return err
	}
	deployments := []struct{ namespace, name string }{{"kube-system", "coredns"}, {StorageNamespace, "local-path-provisioner"}}
	for _, d := range deployments {
		var last string
		err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if exited := n.exited(); exited != "" {
				return false, fmt.Errorf("%s exited (logs in %s)", exited, n.LogDir())
			}
			dep, err := cs.AppsV1().Deployments(d.namespace).Get(ctx, d.name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			pods, err := cs.CoreV1().Pods(d.namespace).List(ctx, metav1.ListOptions{
				LabelSelector: metav1.FormatLabelSelector(dep.Spec.Selector), FieldSelector: "spec.nodeName=" + NodeName})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			last = "no pod"
			for _, p := range pods.Items {
				if ready(&p) {
					return true, nil
				}
				last = podState(&p)
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("%s/%s is not Ready (%s): %w (logs in %s)", d.namespace, d.name, last, err, n.LogDir())
		}
	}
	return nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says in a few words why a pod is not Ready.
func podState(p *corev1.Pod) string {
	parts := []string{p.Name + " " + string(p.Status.Phase)}
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			parts = append(parts, s.Name+" waiting: "+s.State.Waiting.Reason+" "+s.State.Waiting.Message)
		case s.State.Terminated != nil:
			parts = append(parts, s.Name+" terminated: "+s.State.Terminated.Reason)
		}
	}
	return strings.Join(parts, "; ")
}

// onlyComments reports whether a YAML document holds nothing but comments.
func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
