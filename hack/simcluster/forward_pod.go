package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// podDialer connects to pods' ports through the API server's portforward
// subresource, as `kubectl port-forward` does.
type podDialer struct {
	config    *rest.Config
	client    kubernetes.Interface
	namespace string
}

// dial opens a connection of its own to the pod and, on it, the pair of
// streams of one forwarded connection: the error stream and the data.
func (d podDialer) dial(_ context.Context, t target) (stream, error) {
	u := d.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(d.namespace).Name(t.Pod).
		SubResource("portforward").URL()
	dialer, err := portForwardDialer(d.config, u)
	if err != nil {
		return nil, err
	}
	conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, err
	}
	s, err := openStreams(conn, t.Port)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return s, nil
}

// portForwardDialer tries a websocket first, then SPDY, as kubectl does.
func portForwardDialer(config *rest.Config, u *url.URL) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	websocket, err := portforward.NewSPDYOverWebsocketDialer(u, config)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(websocket, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// podStream is one forwarded connection to a pod's port.
type podStream struct {
	conn httpstream.Connection
	data httpstream.Stream
	// errs gets what the pod's side reports on the error stream, then closes.
	errs chan error
}

// openStreams creates the error stream, which the pod's side writes when
// the port cannot be reached, and the data stream, on conn.
func openStreams(conn httpstream.Connection, port int32) (*podStream, error) {
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		return nil, fmt.Errorf("creating the error stream: %w", err)
	}
	// Nothing is written to it.
	_ = errStream.Close()
	s := &podStream{conn: conn, errs: make(chan error, 1)}
	go func() {
		defer close(s.errs)
		msg, err := io.ReadAll(errStream)
		switch {
		case err != nil:
			s.errs <- err
		case len(msg) > 0:
			s.errs <- errors.New(string(msg))
		}
	}()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	if s.data, err = conn.CreateStream(headers); err != nil {
		return nil, fmt.Errorf("creating the data stream: %w", err)
	}
	return s, nil
}

func (s *podStream) Read(p []byte) (int, error)  { return s.data.Read(p) }
func (s *podStream) Write(p []byte) (int, error) { return s.data.Write(p) }
func (s *podStream) CloseWrite() error           { return s.data.Close() }

// Close discards what was not sent, takes what the pod's side reported
// (waiting a little for it) and closes the connection.
func (s *podStream) Close() error {
	_ = s.data.Reset()
	var reported error
	select {
	case reported = <-s.errs:
	case <-time.After(5 * time.Second):
	}
	return errors.Join(reported, s.conn.Close())
}
