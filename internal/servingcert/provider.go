package servingcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// SecretProvider serves the certificate pair of one Secret to the live
// API server (a dynamiccertificates.CertKeyContentProvider it runs):
// it watches that Secret alone and tells the server's listeners when the
// pair changes. Until the Secret holds a valid pair the server has no
// certificate and refuses handshakes; a pair that stops being valid, or a
// deleted Secret, leaves the last valid one served until the leader
// writes the next.
type SecretProvider struct {
	client          kubernetes.Interface
	namespace, name string
	log             logr.Logger

	mu        sync.RWMutex
	cert, key []byte
	listeners []dynamiccertificates.Listener
	// changes gets a value, without blocking, whenever the Secret
	// changes or goes: the Rotator, in the same process, checks it then.
	changes chan struct{}
}

var (
	_ dynamiccertificates.CertKeyContentProvider = (*SecretProvider)(nil)
	_ dynamiccertificates.ControllerRunner       = (*SecretProvider)(nil)
)

// NewSecretProvider serves the pair of Secret namespace/name.
func NewSecretProvider(c kubernetes.Interface, namespace, name string, log logr.Logger) *SecretProvider {
	return &SecretProvider{client: c, namespace: namespace, name: name, log: log, changes: make(chan struct{}, 1)}
}

// Name names the provider in the server's logs.
func (p *SecretProvider) Name() string { return "secret/" + p.namespace + "/" + p.name }

// CurrentCertKeyContent is the pair served now; empty until one is read.
func (p *SecretProvider) CurrentCertKeyContent() (cert, key []byte) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cert, p.key
}

// AddListener adds a listener told when the pair changes.
func (p *SecretProvider) AddListener(l dynamiccertificates.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listeners = append(p.listeners, l)
}

// Changes delivers a value after the Secret changed or was deleted.
func (p *SecretProvider) Changes() <-chan struct{} { return p.changes }

// RunOnce reads the Secret once; its absence is no error.
func (p *SecretProvider) RunOnce(ctx context.Context) error {
	secret, err := p.client.CoreV1().Secrets(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", p.namespace, p.name, err)
	}
	p.load(secret)
	return nil
}

// Run watches the Secret until ctx ends.
func (p *SecretProvider) Run(ctx context.Context, _ int) {
	lw := toolscache.NewListWatchFromClient(p.client.CoreV1().RESTClient(), "secrets", p.namespace,
		fields.OneTermEqualSelector(metav1.ObjectNameField, p.name))
	informer := toolscache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, toolscache.Indexers{})
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observe(obj) },
		UpdateFunc: func(_, obj any) { p.observe(obj) },
		DeleteFunc: func(any) { p.signal() },
	})
	if err != nil {
		p.log.Error(err, "Cannot watch the live API's certificate", "secret", p.Name())
		return
	}
	informer.RunWithContext(ctx)
}

func (p *SecretProvider) observe(obj any) {
	if secret, ok := obj.(*corev1.Secret); ok {
		p.load(secret)
	}
	p.signal()
}

// load takes the Secret's pair, if it is a valid one and a new one, and
// tells the listeners.
func (p *SecretProvider) load(secret *corev1.Secret) {
	cert, key := secret.Data[CertKey], secret.Data[KeyKey]
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		p.log.Info("Not serving the live API's certificate: the Secret holds no valid pair; the leader replaces it",
			"secret", p.Name(), "error", err.Error())
		return
	}
	p.mu.Lock()
	if bytes.Equal(cert, p.cert) && bytes.Equal(key, p.key) {
		p.mu.Unlock()
		return
	}
	p.cert, p.key = cert, key
	listeners := slices.Clone(p.listeners)
	p.mu.Unlock()
	p.log.Info("Serving the live API's certificate", "secret", p.Name())
	for _, l := range listeners {
		l.Enqueue()
	}
}

func (p *SecretProvider) signal() {
	select {
	case p.changes <- struct{}{}:
	default:
	}
}
