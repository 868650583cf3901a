package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestReadyTargets(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo-sample"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
			{Name: "metrics", Port: 9090}, {Name: "http", Port: 80},
		}},
	}
	pod := func(name string, c discoveryv1.EndpointConditions) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.255.0.9"}, Conditions: c,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name}}
	}
	slice := func(endpoints ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{
			Ports: []discoveryv1.EndpointPort{
				{Name: ptr.To("metrics"), Port: ptr.To[int32](9091)}, {Name: ptr.To("http"), Port: ptr.To[int32](8080)},
			},
			Endpoints: endpoints,
		}
	}
	ready, notReady := discoveryv1.EndpointConditions{Ready: ptr.To(true)}, discoveryv1.EndpointConditions{Ready: ptr.To(false)}
	terminating := discoveryv1.EndpointConditions{Ready: ptr.To(true), Terminating: ptr.To(true)}
	for _, tc := range []struct {
		name    string
		slices  []discoveryv1.EndpointSlice
		port    int32
		want    []target
		wantErr bool
	}{
		{name: "no slice", port: 80},
		{name: "ready pods, sorted, at the port the Service's port leads to", port: 80,
			slices: []discoveryv1.EndpointSlice{slice(pod("echo-b", ready)), slice(pod("echo-a", ready))},
			want:   []target{{Pod: "echo-a", Port: 8080}, {Pod: "echo-b", Port: 8080}}},
		{name: "the port chosen by the Service's port", port: 9090,
			slices: []discoveryv1.EndpointSlice{slice(pod("echo-a", ready))},
			want:   []target{{Pod: "echo-a", Port: 9091}}},
		{name: "unset readiness means ready", port: 80,
			slices: []discoveryv1.EndpointSlice{slice(pod("echo-a", discoveryv1.EndpointConditions{}))},
			want:   []target{{Pod: "echo-a", Port: 8080}}},
		{name: "a rollout: not ready and terminating pods left out", port: 80,
			slices: []discoveryv1.EndpointSlice{slice(pod("old", terminating), pod("new-1", ready), pod("new-2", notReady))},
			want:   []target{{Pod: "new-1", Port: 8080}}},
		{name: "a pod in two slices once", port: 80,
			slices: []discoveryv1.EndpointSlice{slice(pod("echo-a", ready)), slice(pod("echo-a", ready))},
			want:   []target{{Pod: "echo-a", Port: 8080}}},
		{name: "endpoints that are no pods left out", port: 80,
			slices: []discoveryv1.EndpointSlice{slice(discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: ready})}},
		{name: "a slice without the port left out", port: 80,
			slices: []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{pod("echo-a", ready)}}}},
		{name: "a port the Service lacks", port: 443, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readyTargets(svc, tc.slices, tc.port)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %t", err, tc.wantErr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("targets %v, want %v", got, tc.want)
			}
		})
	}
}

// fakePod is a TCP server that answers each line with the pod's name and
// the line.
type fakePod struct {
	name string
	l    net.Listener
}

func startFakePod(t *testing.T, name string) *fakePod {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePod{name: name, l: l}
	t.Cleanup(p.stop)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				line, _ := bufio.NewReader(conn).ReadString('\n')
				_, _ = fmt.Fprintf(conn, "%s: %s", name, line)
			}()
		}
	}()
	return p
}

func (p *fakePod) stop() { _ = p.l.Close() }

// fakeService is a Service whose ready pods the test sets, as a rollout
// changes them.
type fakeService struct {
	mu      sync.Mutex
	ready   [][]*fakePod // what each call returns; the last one from then on
	pods    map[string]*fakePod
	resolve int
}

func (s *fakeService) set(ready ...[]*fakePod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready, s.pods = ready, map[string]*fakePod{}
	for _, pods := range ready {
		for _, p := range pods {
			s.pods[p.name] = p
		}
	}
}

func (s *fakeService) targets(context.Context) ([]target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolve++
	pods := s.ready[0]
	if len(s.ready) > 1 {
		s.ready = s.ready[1:]
	}
	var out []target
	for _, p := range pods {
		out = append(out, target{Pod: p.name, Port: 8080})
	}
	return out, nil
}

func (s *fakeService) dial(ctx context.Context, tg target) (stream, error) {
	s.mu.Lock()
	p := s.pods[tg.Pod]
	s.mu.Unlock()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.l.Addr().String())
	if err != nil {
		return nil, err
	}
	return conn.(*net.TCPConn), nil
}

// ask sends a line through the forward and returns the answer.
func ask(t *testing.T, addr, line string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	answer, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return string(answer)
}

// TestForwardFollowsTheServiceAcrossARollout: each connection goes to a
// pod that is ready when it is made, so the forward outlives the pods it
// forwarded to; a pod that does not answer is passed over, and a
// connection made while no pod is ready waits for one.
func TestForwardFollowsTheServiceAcrossARollout(t *testing.T) {
	oldPod, newPod := startFakePod(t, "echo-old"), startFakePod(t, "echo-new")
	svc := &fakeService{}
	svc.set([]*fakePod{oldPod})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	f := &serviceForwarder{targets: svc.targets, dial: svc.dial, log: io.Discard}
	go func() { served <- f.serve(ctx, l) }()
	addr := l.Addr().String()

	if got, want := ask(t, addr, "hello"), "echo-old: hello\n"; got != want {
		t.Errorf("before the rollout: %q, want %q", got, want)
	}
	// The rollout: the old pod is gone, the new one ready.
	oldPod.stop()
	svc.set([]*fakePod{newPod})
	if got, want := ask(t, addr, "again"), "echo-new: again\n"; got != want {
		t.Errorf("after the rollout: %q, want %q", got, want)
	}
	// The Service still lists a pod that is gone: the next one answers.
	svc.set([]*fakePod{oldPod, newPod})
	if got, want := ask(t, addr, "passed over"), "echo-new: passed over\n"; got != want {
		t.Errorf("with a gone pod listed first: %q, want %q", got, want)
	}
	// No pod ready for a moment: the connection waits for one.
	svc.set(nil, nil, []*fakePod{newPod})
	if got, want := ask(t, addr, "waited"), "echo-new: waited\n"; got != want {
		t.Errorf("while no pod was ready: %q, want %q", got, want)
	}
	svc.mu.Lock()
	if svc.resolve != 6 {
		t.Errorf("the Service was resolved %d times, want once per connection, and per retry while none was ready (6)", svc.resolve)
	}
	svc.mu.Unlock()

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return once stopped")
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the forward still listens once stopped")
	}
}

// slowClose is a pod stream whose Close waits for the test, as the error
// stream of a port-forward may.
type slowClose struct {
	*net.TCPConn
	release chan struct{}
}

func (s slowClose) Close() error {
	<-s.release
	return s.TCPConn.Close()
}

// TestPipeEndsTheLocalConnectionFirst: a client that reads to the end of
// the answer gets it once the pod's side ends, not once the pod's stream
// is done closing.
func TestPipeEndsTheLocalConnectionFirst(t *testing.T) {
	pod := startFakePod(t, "echo-a")
	remote, err := net.Dial("tcp", pod.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	client, local := net.Pipe()
	release := make(chan struct{})
	piped := make(chan error, 1)
	go func() { piped <- pipe(local, slowClose{TCPConn: remote.(*net.TCPConn), release: release}) }()
	if _, err := io.WriteString(client, "hello\n"); err != nil {
		t.Fatal(err)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("reading to the end: %v (got %q)", err, answer)
	}
	if string(answer) != "echo-a: hello\n" {
		t.Errorf("answer %q", answer)
	}
	close(release)
	if err := <-piped; err != nil {
		t.Errorf("pipe: %v", err)
	}
}
