package liveapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/egress"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

const (
	// listingTTL is how long a location's listing is served from memory:
	// a busy `kubectl get storedbackups` reads the storage at most this
	// often per location.
	listingTTL = 15 * time.Second
)

// listingLimits bound what listings of locations' storage cost the
// process: a location's storage is the tenant's choice, and may answer
// with endless listings, huge manifests, or not at all. docs/live-api.md
// tells them, and what they add up to.
type listingLimits struct {
	// timeout bounds reading one location, from when it holds a slot;
	// wait bounds waiting for that slot, or for the listing of the same
	// location that another request runs. Together they stay within the
	// API server's request timeout (60s).
	timeout, wait time.Duration
	// listings bounds the locations read at once, perNamespace of them
	// for one namespace; manifests and manifestsPerNamespace the manifests.
	listings, listingsPerNamespace   int
	manifests, manifestsPerNamespace int
	// objects, pages, responseBytes and manifestBytes bound one listing
	// (backupstore.ListOptions).
	objects, pages               int
	responseBytes, manifestBytes int64
	// cachedBackups and cachedBytes bound the listings remembered across
	// locations.
	cachedBackups, cachedBytes int
}

var defaultListingLimits = listingLimits{
	timeout:               20 * time.Second,
	wait:                  30 * time.Second,
	listings:              4,
	listingsPerNamespace:  2,
	manifests:             16,
	manifestsPerNamespace: 4,
	objects:               backupstore.DefaultListMaxObjects,
	pages:                 backupstore.DefaultListMaxPages,
	responseBytes:         backupstore.DefaultListMaxResponseBytes,
	manifestBytes:         backupstore.DefaultManifestSummaryBytes,
	cachedBackups:         100_000,
	cachedBytes:           32 << 20,
}

// locationListings reads, and remembers for listingTTL, the backups in
// the storage of each EchoBackupLocation, within listingLimits. Listings
// of one location do not run at once: concurrent requests wait for the
// one running.
type locationListings struct {
	// api reads the Secrets that hold the storage credentials: they are
	// not cached.
	api       client.Reader
	manifests backupstore.ManifestCache
	limits    listingLimits
	// listingSlots and manifestSlots bound the listings and manifest
	// reads across the process, and each namespace's share.
	listingSlots, manifestSlots *namespaceLimiter
	cache                       *listingCache
	// egress decides where the storage connections may go.
	egress *egress.Policy
	// endpoints are those the administrator allows an SSE-C key to be
	// sent to, besides those its Secret lists.
	endpoints storagesecrets.ClusterEndpoints
}

func newLocationListings(api client.Reader, policy *egress.Policy, endpoints storagesecrets.ClusterEndpoints, limits listingLimits) *locationListings {
	if policy == nil {
		policy = &egress.Policy{}
	}
	return &locationListings{
		api:           api,
		limits:        limits,
		listingSlots:  newNamespaceLimiter(limits.listings, limits.listingsPerNamespace),
		manifestSlots: newNamespaceLimiter(limits.manifests, limits.manifestsPerNamespace),
		cache:         newListingCache(limits.cachedBackups, limits.cachedBytes),
		egress:        policy,
		endpoints:     endpoints,
	}
}

// list returns the backups of loc's storage, read now or less than
// listingTTL ago with the location as it is. Its error, when the storage
// cannot be read in time, is a 503 Service Unavailable that names the
// location and says why (listingError).
func (l *locationListings) list(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) (locationListing, error) {
	entry := l.cache.entry(loc.Namespace + "/" + loc.Name)
	wait, cancel := context.WithTimeout(ctx, l.limits.wait)
	defer cancel()
	if err := entry.lockContext(wait); err != nil {
		return locationListing{}, busyError(loc, fmt.Sprintf("another request has been listing it for %s", l.limits.wait))
	}
	defer entry.unlock()
	if listing, ok, err := l.cache.fresh(entry, loc.ResourceVersion); ok {
		return listing, err
	}
	release, err := l.listingSlots.acquire(wait, loc.Namespace)
	if err != nil {
		return locationListing{}, busyError(loc, fmt.Sprintf("the operator is listing as many locations as it may at once (%d, %d per namespace), and none ended within %s",
			l.limits.listings, l.limits.listingsPerNamespace, l.limits.wait))
	}
	defer release()
	listing, err := l.read(ctx, loc)
	if err != nil {
		// A storage that failed is not read again for listingTTL either:
		// the requests meanwhile get its error at once. A failure that
		// asked the storage nothing (the request ended, a Secret to fix,
		// an address the policy refuses) costs nothing to find again, and
		// is told again as soon as it is fixed.
		remember := ctx.Err() == nil && !askedNothing(err)
		if err = listingError(loc, err); !remember {
			return locationListing{}, err
		}
	}
	l.cache.keep(entry, loc.ResourceVersion, listing, err)
	return listing, err
}

// askedNothing reports whether a listing failed before anything was sent
// to the storage: on the location itself, or on the egress policy.
func askedNothing(err error) bool {
	var local *locationError
	var refused *egress.RefusedError
	return errors.As(err, &local) || errors.As(err, &refused)
}

// busyError is the 503 Service Unavailable of a location the operator had
// no time to read: nothing was asked of its storage.
func busyError(loc *echov1alpha1.EchoBackupLocation, why string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("EchoBackupLocation %s/%s: not read: %s", loc.Namespace, loc.Name, why))
}

// read lists loc's storage with the data mover's backup store, within the
// limits.
func (l *locationListings) read(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) (locationListing, error) {
	ctx, cancel := context.WithTimeout(ctx, l.limits.timeout)
	defer cancel()
	store, err := l.open(ctx, loc)
	if err != nil {
		return locationListing{}, err
	}
	listing, err := backupstore.ListBackups(ctx, store, backupstore.ListOptions{
		Manifests: &l.manifests,
		Scope:     locationScope(loc),
		// Only the backups a StoredBackup can name are listed, and their
		// manifests read.
		Keep: func(key string) bool {
			_, ok := livev1alpha1.StoredBackupName(loc.Name, key)
			return ok
		},
		MaxObjects:       l.limits.objects,
		MaxPages:         l.limits.pages,
		MaxResponseBytes: l.limits.responseBytes,
		ManifestBytes:    l.limits.manifestBytes,
		Gate: func(ctx context.Context) (func(), error) {
			return l.manifestSlots.acquire(ctx, loc.Namespace)
		},
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return locationListing{}, fmt.Errorf("the storage did not answer within %s: %w", l.limits.timeout, err)
	}
	return locationListing{backups: listing.Backups, cut: listing.Cut}, err
}

// locationScope is the identity of a location's storage for the cache of
// manifests: what one location read is never shown for another, even of
// the same bucket and key on an endpoint of the same name.
func locationScope(loc *echov1alpha1.EchoBackupLocation) string {
	s3 := loc.Spec.S3
	return strings.Join([]string{loc.Namespace, loc.Name, string(loc.UID), s3.Endpoint, s3.Bucket, s3.Prefix}, "\x00")
}

// open builds the store of loc with the credentials of its Secret, each
// Secret checked on the object whose data is used (optedInSecret). Its errors are the location's own (a Secret missing
// or not opted in, an endpoint that is no URL): nothing has been asked of
// the storage yet. The store connects only where l.egress allows.
func (l *locationListings) open(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) (backupstore.Store, error) {
	s3 := moverprotocol.ResolveS3(&loc.Spec.S3)
	if s3.ServiceAccount != "" {
		// A token of the ServiceAccount would have to be requested for the
		// manager: it holds no right to, and takes none.
		return nil, &locationError{fmt.Errorf("the location authenticates as ServiceAccount %s (storage.s3.identity), "+
			"and the live API lists only locations whose credentials are in a Secret: its backups and restores work, its listing does not",
			s3.ServiceAccount)}
	}
	creds, err := l.optedInSecret(ctx, loc, s3.CredentialsSecret, "credentials", "")
	if err != nil {
		return nil, err
	}
	id, secret := creds.Data[s3.AccessKeyIDKey], creds.Data[s3.SecretAccessKeyKey]
	if len(id) == 0 || len(secret) == 0 {
		return nil, &locationError{fmt.Errorf("the credentials Secret %s has no %s or no %s", creds.Name, s3.AccessKeyIDKey, s3.SecretAccessKeyKey)}
	}
	cfg := backupstore.S3Config{Endpoint: s3.Endpoint, Region: s3.Region, Bucket: s3.Bucket, Prefix: s3.Prefix, PathStyle: s3.PathStyle,
		MaxRetries: 1, Transport: l.egress.ConfigureTransport,
		Encryption: backupstore.S3Encryption{Type: string(s3.Encryption), KMSKeyID: s3.KMSKeyID}}
	// A mover Job's pod would not start without either.
	if s3.CASecret != "" {
		if cfg.CABundle, err = l.secretKey(ctx, loc, s3.CASecret, s3.CAKey, "CA bundle", ""); err != nil {
			return nil, err
		}
	}
	if s3.CustomerKeySecret != "" {
		if cfg.Encryption.CustomerKey, err = l.secretKey(ctx, loc, s3.CustomerKeySecret, s3.CustomerKeyKey, "SSE-C key", s3.Endpoint); err != nil {
			return nil, err
		}
	}
	store, err := backupstore.NewS3StoreWithCredentials(cfg, string(id), string(secret))
	if err != nil {
		return nil, &locationError{err}
	}
	return store, nil
}

// secretKey is the value of key in the opted-in Secret name of loc's
// namespace, which holds the location's what, and may go to endpoint
// (when given: optedInSecret); a missing, refused Secret or key is the
// location's error.
func (l *locationListings) secretKey(ctx context.Context, loc *echov1alpha1.EchoBackupLocation, name, key, what, endpoint string) ([]byte, error) {
	secret, err := l.optedInSecret(ctx, loc, name, what, endpoint)
	if err != nil {
		return nil, err
	}
	value := secret.Data[key]
	if len(value) == 0 {
		return nil, &locationError{fmt.Errorf("the %s Secret %s has no %s", what, name, key)}
	}
	return value, nil
}
