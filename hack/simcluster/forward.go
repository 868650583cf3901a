package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// readyWait bounds how long a new connection waits for a ready pod of the
// Service, as during a rollout whose new pods are not ready yet.
const readyWait = 30 * time.Second

// runForward is `simcluster forward`: it forwards a local address to a
// Service until a stop signal.
func runForward(args []string) error {
	fs := flag.NewFlagSet("simcluster forward", flag.ExitOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG)")
		namespace  = fs.String("namespace", "default", "the Service's namespace")
		service    = fs.String("service", "", "the Service's name")
		port       = fs.Int("port", 80, "the Service's port")
		address    = fs.String("address", "127.0.0.1:8080", "the local address to listen on")
	)
	_ = fs.Parse(args)
	if fs.NArg() != 0 || *service == "" {
		return fmt.Errorf("usage: simcluster forward --service NAME [--namespace NS] [--port 80] [--address 127.0.0.1:8080] [--kubeconfig K]")
	}
	if *kubeconfig == "" {
		*kubeconfig = os.Getenv("KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	l, err := net.Listen("tcp", *address)
	if err != nil {
		return err
	}
	svc := serviceRef{client: cs, namespace: *namespace, name: *service, port: int32(*port)}
	fmt.Fprintf(os.Stderr, "Forwarding from %s to %s, to a ready pod of it for each connection\n", l.Addr(), svc)
	f := &serviceForwarder{
		targets: svc.targets,
		dial:    podDialer{config: cfg, client: cs, namespace: *namespace}.dial,
		log:     os.Stderr,
	}
	return f.serve(ctx, l)
}

// target is a pod and the port of it that a Service's port leads to.
type target struct {
	Pod  string
	Port int32
}

// stream is a connection to a pod's port.
type stream interface {
	io.ReadWriter
	// CloseWrite tells the pod that no more data comes.
	CloseWrite() error
	// Close ends the connection, and says what the pod's side reported.
	Close() error
}

// serviceForwarder forwards each connection it accepts to a ready pod of
// a Service, resolved for that connection: a rollout that replaces the
// pods does not end the forward.
type serviceForwarder struct {
	// targets are the Service's ready pods.
	targets func(context.Context) ([]target, error)
	// dial connects to a pod's port.
	dial func(context.Context, target) (stream, error)
	log  io.Writer
}

// serve accepts connections on l and forwards each, until ctx ends; it
// then closes l and the open connections and returns once they are done.
func (f *serviceForwarder) serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Go(func() { f.handle(ctx, conn) })
	}
}

// handle forwards one local connection to a ready pod.
func (f *serviceForwarder) handle(ctx context.Context, local net.Conn) {
	defer func() { _ = local.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = local.Close() })
	defer stop()
	remote, pod, err := f.open(ctx)
	if err != nil {
		_, _ = fmt.Fprintf(f.log, "forward: connection from %s: %v\n", local.RemoteAddr(), err)
		return
	}
	_, _ = fmt.Fprintf(f.log, "Handling connection from %s with pod %s\n", local.RemoteAddr(), pod)
	if err := pipe(local, remote); err != nil {
		_, _ = fmt.Fprintf(f.log, "forward: connection from %s with pod %s: %v\n", local.RemoteAddr(), pod, err)
	}
}

// open connects to the first ready pod that answers, waiting up to
// readyWait while the Service has none.
func (f *serviceForwarder) open(ctx context.Context) (stream, string, error) {
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	for {
		targets, err := f.targets(ctx)
		if err != nil {
			return nil, "", err
		}
		var errs []error
		for _, t := range targets {
			s, err := f.dial(ctx, t)
			if err == nil {
				return s, t.Pod, nil
			}
			errs = append(errs, fmt.Errorf("pod %s: %w", t.Pod, err))
		}
		if len(targets) == 0 {
			errs = append(errs, errors.New("no ready pod"))
		}
		select {
		case <-ctx.Done():
			return nil, "", fmt.Errorf("no pod to forward to after %s: %w", readyWait, errors.Join(errs...))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// pipe copies between the local connection and the pod's stream until the
// pod's side ends or the local side fails; the end of the local side's
// data is passed on. It closes the local connection first, so that a
// client reading to the end is not kept waiting, and returns what the
// pod's side reported.
func pipe(local net.Conn, remote stream) error {
	remoteDone, localFailed := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = io.Copy(local, remote)
		close(remoteDone)
	}()
	go func() {
		if _, err := io.Copy(remote, local); err != nil {
			close(localFailed)
			return
		}
		_ = remote.CloseWrite()
	}()
	select {
	case <-remoteDone:
	case <-localFailed:
	}
	_ = local.Close()
	return remote.Close()
}

// serviceRef names a Service's port.
type serviceRef struct {
	client          kubernetes.Interface
	namespace, name string
	port            int32
}

func (s serviceRef) String() string {
	return fmt.Sprintf("service %s/%s:%d", s.namespace, s.name, s.port)
}

// targets reads the Service and its EndpointSlices.
func (s serviceRef) targets(ctx context.Context) ([]target, error) {
	svc, err := s.client.CoreV1().Services(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s, err)
	}
	slices, err := s.client.DiscoveryV1().EndpointSlices(s.namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + s.name})
	if err != nil {
		return nil, fmt.Errorf("listing the endpoints of %s: %w", s, err)
	}
	return readyTargets(svc, slices.Items, s.port)
}

// readyTargets are the ready pods of svc's EndpointSlices, each with the
// pod's port that svc's port leads to (named targetPorts resolved by the
// EndpointSlice controller), sorted by pod name.
func readyTargets(svc *corev1.Service, slices []discoveryv1.EndpointSlice, port int32) ([]target, error) {
	portName, found := "", false
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			portName, found = p.Name, true
		}
	}
	if !found {
		return nil, fmt.Errorf("service %s/%s has no port %d", svc.Namespace, svc.Name, port)
	}
	var out []target
	seen := map[string]bool{}
	for _, s := range slices {
		podPort := slicePort(s, portName)
		if podPort == nil {
			continue
		}
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || !ready(e.Conditions) || seen[e.TargetRef.Name] {
				continue
			}
			seen[e.TargetRef.Name] = true
			out = append(out, target{Pod: e.TargetRef.Name, Port: *podPort})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out, nil
}

// slicePort is the port of the slice named name, or nil.
func slicePort(s discoveryv1.EndpointSlice, name string) *int32 {
	for _, p := range s.Ports {
		if ptr.Deref(p.Name, "") == name && p.Port != nil {
			return p.Port
		}
	}
	return nil
}

// ready reports whether an endpoint takes new connections: ready (unset
// means ready) and not terminating.
func ready(c discoveryv1.EndpointConditions) bool {
	return ptr.Deref(c.Ready, true) && !ptr.Deref(c.Terminating, false)
}
