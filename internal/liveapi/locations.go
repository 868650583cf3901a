package liveapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/datamover"
	"github.com/echo-operator/echo-operator/internal/egress"
)

const (
	// listingTTL is how long a location's listing is served from memory:
	// a busy `kubectl get storedbackups` reads the storage at most this
	// often per location.
	listingTTL = 15 * time.Second
	// listingTimeout bounds reading a location's storage, well within
	// the API server's request timeout (60s): an unreachable storage
	// fails the request with a message instead of hanging it.
	listingTimeout = 20 * time.Second
)

// locationListings reads, and remembers for listingTTL, the backups in
// the storage of each EchoBackupLocation. Listings of one location do not
// run at once: concurrent requests wait for the one running.
type locationListings struct {
	// api reads the Secrets that hold the storage credentials: they are
	// not cached.
	api       client.Reader
	manifests datamover.ManifestCache
	now       func() time.Time

	// egress decides where the storage connections may go.
	egress *egress.Policy

	mu      sync.Mutex
	entries map[string]*listing
}

// listing is the latest listing of one location.
type listing struct {
	mu sync.Mutex
	// version is the location's resourceVersion when it was read.
	version string
	at      time.Time
	backups []datamover.StoredBackup
}

func newLocationListings(api client.Reader, policy *egress.Policy) *locationListings {
	if policy == nil {
		policy = &egress.Policy{}
	}
	return &locationListings{api: api, egress: policy, now: time.Now, entries: map[string]*listing{}}
}

// list returns the backups of loc's storage, read now or less than
// listingTTL ago with the location as it is. A storage that cannot be
// read fails with 503 Service Unavailable and a message that says why.
func (l *locationListings) list(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) ([]datamover.StoredBackup, error) {
	id := loc.Namespace + "/" + loc.Name
	l.mu.Lock()
	entry, ok := l.entries[id]
	if !ok {
		l.forgetStale()
		entry = &listing{}
		l.entries[id] = entry
	}
	l.mu.Unlock()

	entry.mu.Lock()
	defer entry.mu.Unlock()
	if entry.version == loc.ResourceVersion && l.now().Sub(entry.at) < listingTTL {
		return entry.backups, nil
	}
	backups, err := l.read(ctx, loc)
	if err != nil {
		return nil, listingError(loc, err)
	}
	entry.version, entry.at, entry.backups = loc.ResourceVersion, l.now(), backups
	return backups, nil
}

// forgetStale drops, once there are many, the listings older than
// listingTTL, which the next request reads again anyway: those of deleted
// locations go with them. l.mu is held.
func (l *locationListings) forgetStale() {
	if len(l.entries) < maxListings {
		return
	}
	for id, e := range l.entries {
		if e.mu.TryLock() {
			if l.now().Sub(e.at) >= listingTTL {
				delete(l.entries, id)
			}
			e.mu.Unlock()
		}
	}
}

// maxListings is the number of locations whose listings are kept before
// stale ones are dropped.
const maxListings = 256

// read lists loc's storage through the data mover's code.
func (l *locationListings) read(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) ([]datamover.StoredBackup, error) {
	ctx, cancel := context.WithTimeout(ctx, listingTimeout)
	defer cancel()
	store, err := l.open(ctx, loc)
	if err != nil {
		return nil, err
	}
	backups, err := datamover.ListBackups(ctx, store, &l.manifests)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("the storage did not answer within %s: %w", listingTimeout, err)
	}
	return backups, err
}

// open builds the store of loc with the credentials of its Secret, which
// must have opted in. Its errors are the location's own (a Secret missing
// or not opted in, an endpoint that is no URL): nothing has been asked of
// the storage yet. The store connects only where l.egress allows.
func (l *locationListings) open(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) (datamover.Store, error) {
	if err := l.requireOptedIn(ctx, loc); err != nil {
		return nil, &locationError{err}
	}
	s3 := loc.Spec.S3
	creds := &corev1.Secret{}
	if err := l.api.Get(ctx, client.ObjectKey{Namespace: loc.Namespace, Name: s3.CredentialsSecretRef.Name}, creds); err != nil {
		return nil, &locationError{fmt.Errorf("reading the credentials Secret %s: %w", s3.CredentialsSecretRef.Name, err)}
	}
	id, secret := creds.Data[s3.CredentialsSecretRef.AccessKeyIDKey], creds.Data[s3.CredentialsSecretRef.SecretAccessKeyKey]
	if len(id) == 0 || len(secret) == 0 {
		return nil, &locationError{fmt.Errorf("the credentials Secret %s has no %s or no %s", creds.Name, s3.CredentialsSecretRef.AccessKeyIDKey, s3.CredentialsSecretRef.SecretAccessKeyKey)}
	}
	cfg := datamover.S3Config{
		Endpoint:   s3.Endpoint,
		Region:     s3.Region,
		Bucket:     s3.Bucket,
		Prefix:     s3.Prefix,
		PathStyle:  s3.ForcePathStyle,
		MaxRetries: 1,
		Transport:  l.egress.ConfigureTransport,
	}
	if s3.CABundle != nil {
		ca := &corev1.Secret{}
		if err := l.api.Get(ctx, client.ObjectKey{Namespace: loc.Namespace, Name: s3.CABundle.Name}, ca); err != nil {
			return nil, &locationError{fmt.Errorf("reading the CA bundle Secret %s: %w", s3.CABundle.Name, err)}
		}
		cfg.CABundle = ca.Data[s3.CABundle.Key]
	}
	store, err := datamover.NewS3StoreWithCredentials(cfg, string(id), string(secret))
	if err != nil {
		return nil, &locationError{err}
	}
	return store, nil
}
