package servingcert

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bounds of the time between two checks of the Rotator.
const (
	// recheckInterval repairs, within a minute, a caBundle someone else
	// changed and an APIService the Rotator registers that was deleted
	// (two reads when nothing changed); a change of the Secret is seen at
	// once.
	recheckInterval = time.Minute
	// The wait after a failed check grows from minRetry to maxRetry.
	minRetry = time.Second
	maxRetry = time.Minute
)

// Rotator keeps the Secret's CA and serving certificate current and the
// APIService's caBundle equal to the Secret's CA bundle. It runs on the
// leader only. Everything it knows is read back from the Secret and the
// APIService at each check, so a restart, or a new leader, carries on.
//
// A new CA is written to the Secret, then to the caBundle next to the one
// before it, and signs a serving certificate only caTrustDelay later, as
// long as the certificate served until then is valid: kube-apiserver
// trusts the new CA before any replica serves what it signed, and
// replicas that still serve the old certificate stay trusted until they
// load the new.
type Rotator struct {
	// Client writes the Secret and the APIService; Reader reads them from
	// the API server, not from a cache.
	Client client.Client
	Reader client.Reader
	// Namespace and SecretName name the Secret.
	Namespace, SecretName string
	// APIService is the APIService whose caBundle is kept; the serving
	// certificate is issued for the Service it names.
	APIService string
	// Service, when set, is the Service of Namespace in front of the
	// replicas, and the Rotator registers the APIService itself (the OLM
	// install, where no manifest creates it): it creates it, pointing at
	// that Service, when it is missing, and points it there again when it
	// points elsewhere. Empty: the APIService must exist (config/default).
	Service string
	// Owner, when set, is the ClusterRole (OwnerClusterRole) the
	// APIService is given as its owner, so that deleting it, as every
	// uninstall does, deletes the APIService too. The Rotator registers
	// no APIService while it is missing.
	Owner     string
	Lifetimes Lifetimes
	// Changes delivers a value when the Secret changes (SecretProvider).
	Changes <-chan struct{}
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log logr.Logger
}

// NeedLeaderElection is true: one replica issues certificates.
func (*Rotator) NeedLeaderElection() bool { return true }

// Start checks at once, then whenever the Secret changes, at the next
// renewal and every recheckInterval, until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	retry := minRetry
	for {
		wait := recheckInterval
		renewal, err := r.Ensure(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "Cannot keep the live API's serving certificate; retrying", "secret", r.Namespace+"/"+r.SecretName, "apiService", r.APIService, "retryAfter", retry)
			wait, retry = retry, min(2*retry, maxRetry)
		default:
			retry = minRetry
			if until := renewal.Sub(r.now()); until < wait {
				wait = max(until, minRetry)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.Changes:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Ensure brings the Secret and the caBundle up to date and returns when
// to check next: the next renewal, or when a new CA may sign.
func (r *Rotator) Ensure(ctx context.Context) (time.Time, error) {
	now := r.now()
	apiService, dnsNames, err := r.readOwnedAPIService(ctx)
	if err != nil {
		return time.Time{}, err
	}
	secret := &corev1.Secret{}
	exists := true
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.SecretName}, secret); apierrors.IsNotFound(err) {
		exists = false
	} else if err != nil {
		return time.Time{}, fmt.Errorf("reading Secret %s/%s: %w", r.Namespace, r.SecretName, err)
	}
	data := maps.Clone(secret.Data)
	if data == nil {
		data = map[string][]byte{}
	}

	// A new CA is stored before it is trusted (a CA whose key was never
	// stored is never trusted), and trusted before it signs what is
	// served.
	caChanged, err := ensureCA(data, now, r.Lifetimes.CA)
	if err != nil {
		return time.Time{}, err
	}
	if !exists {
		// Nothing is served yet, and a kubernetes.io/tls Secret holds a
		// pair from the start: the first certificate goes with the CA.
		if _, err := ensureServing(data, dnsNames, now, r.Lifetimes.Serving); err != nil {
			return time.Time{}, err
		}
	}
	if caChanged || !exists {
		if err := r.writeSecret(ctx, secret, data, exists); err != nil {
			return time.Time{}, err
		}
		if !exists {
			r.Log.Info("Issued the live API's CA and serving certificate", "secret", r.Namespace+"/"+r.SecretName, "dnsNames", dnsNames)
		}
		exists = true
	}
	if err := r.ensureCABundle(ctx, apiService, data[CABundle]); err != nil {
		return time.Time{}, err
	}
	if until := servingHeldUntil(data, dnsNames, now); !until.IsZero() {
		r.Log.Info("Serving the previous CA's certificate until the new CA is trusted", "secret", r.Namespace+"/"+r.SecretName, "until", until)
		return until, nil
	}
	issued, err := ensureServing(data, dnsNames, now, r.Lifetimes.Serving)
	if err != nil {
		return time.Time{}, err
	}
	if issued {
		if err := r.writeSecret(ctx, secret, data, exists); err != nil {
			return time.Time{}, err
		}
		r.Log.Info("Issued the live API's serving certificate", "secret", r.Namespace+"/"+r.SecretName, "dnsNames", dnsNames)
	}
	return nextRenewal(data), nil
}

// readOwnedAPIService reads the APIService, registering it if it is
// missing and the Rotator registers it, gives it its Owner, and returns
// it with the DNS names of the Service it names. The owner is read first:
// while it is missing, an uninstall is under way, and nothing is
// registered that the garbage collector would not delete.
func (r *Rotator) readOwnedAPIService(ctx context.Context) (*unstructured.Unstructured, []string, error) {
	if r.Owner == "" {
		return r.readAPIService(ctx, nil)
	}
	owner, err := ownerReference(ctx, r.Reader, r.Owner)
	if err != nil {
		return nil, nil, err
	}
	apiService, dnsNames, err := r.readAPIService(ctx, &owner)
	if err != nil {
		return nil, nil, err
	}
	changed, err := ensureOwner(ctx, r.Client, apiService, owner)
	if err != nil {
		return nil, nil, err
	}
	if changed {
		r.Log.Info("Made the ClusterRole the owner of the live API's APIService", "apiService", r.APIService, "clusterRole", r.Owner)
	}
	return apiService, dnsNames, nil
}

// readAPIService reads the APIService and the DNS names of the Service it
// names; it registers the APIService, owned by owner, if it is missing
// and the Rotator registers it.
func (r *Rotator) readAPIService(ctx context.Context, owner *metav1.OwnerReference) (*unstructured.Unstructured, []string, error) {
	apiService := EmptyAPIService()
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: r.APIService}, apiService); err != nil {
		if apierrors.IsNotFound(err) && r.Service != "" {
			return r.register(ctx, owner)
		}
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("APIService %s does not exist: apply config/default, which registers the live API: %w", r.APIService, err)
		}
		return nil, nil, fmt.Errorf("reading APIService %s: %w", r.APIService, err)
	}
	namespace, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "namespace")
	name, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
	if r.Service != "" && (namespace != r.Namespace || name != r.Service) {
		if err := r.pointAtService(ctx, apiService); err != nil {
			return nil, nil, err
		}
		namespace, name = r.Namespace, r.Service
	}
	if namespace == "" || name == "" {
		return nil, nil, errors.New("APIService " + r.APIService + " names no Service: the live API is served by a Service in front of the manager")
	}
	return apiService, ServiceDNSNames(namespace, name), nil
}

// register creates the APIService, pointing at the Service, owned by
// owner when given, with no caBundle yet (kube-apiserver reports it
// unavailable until the check writes it), and returns it with the
// Service's DNS names.
func (r *Rotator) register(ctx context.Context, owner *metav1.OwnerReference) (*unstructured.Unstructured, []string, error) {
	apiService, err := NewAPIService(r.APIService, r.Namespace, r.Service)
	if err != nil {
		return nil, nil, err
	}
	if owner != nil {
		apiService.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	if err := r.Client.Create(ctx, apiService); err != nil {
		return nil, nil, fmt.Errorf("registering APIService %s: %w", r.APIService, err)
	}
	r.Log.Info("Registered the live API's APIService", "apiService", r.APIService, "service", r.Namespace+"/"+r.Service)
	return apiService, ServiceDNSNames(r.Namespace, r.Service), nil
}

// pointAtService sets the APIService's service to the Rotator's Service.
func (r *Rotator) pointAtService(ctx context.Context, apiService *unstructured.Unstructured) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"service": serviceRef(r.Namespace, r.Service)}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, apiService, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pointing APIService %s at Service %s/%s: %w", r.APIService, r.Namespace, r.Service, err)
	}
	r.Log.Info("Pointed the live API's APIService at the operator's Service", "apiService", r.APIService, "service", r.Namespace+"/"+r.Service)
	return nil
}

// ensureCABundle sets the APIService's caBundle to bundle, unless it is.
func (r *Rotator) ensureCABundle(ctx context.Context, apiService *unstructured.Unstructured, bundle []byte) error {
	want := base64.StdEncoding.EncodeToString(bundle)
	if have, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle"); have == want {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": want}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, apiService, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing the caBundle of APIService %s: %w", r.APIService, err)
	}
	r.Log.Info("Set the caBundle of the live API's APIService", "apiService", r.APIService)
	return nil
}

// writeSecret creates the Secret with data, or updates it from the copy
// read at the start of the check (a concurrent change fails the write,
// and the next check starts over).
func (r *Rotator) writeSecret(ctx context.Context, secret *corev1.Secret, data map[string][]byte, exists bool) error {
	if !exists {
		secret.ObjectMeta = metav1.ObjectMeta{Namespace: r.Namespace, Name: r.SecretName, Labels: map[string]string{
			"app.kubernetes.io/name": "echo-operator", "app.kubernetes.io/component": "live-api",
		}}
		secret.Type = corev1.SecretTypeTLS
		secret.Data = maps.Clone(data)
		if err := r.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating Secret %s/%s: %w", r.Namespace, r.SecretName, err)
		}
		return nil
	}
	secret.Data = maps.Clone(data)
	if err := r.Client.Update(ctx, secret); err != nil {
		return fmt.Errorf("updating Secret %s/%s: %w", r.Namespace, r.SecretName, err)
	}
	return nil
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
