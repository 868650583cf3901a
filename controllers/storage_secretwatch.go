package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/cachetrim"
)

// Work waiting for a storage Secret to exist (ReasonSecretNotFound) goes
// on when it appears with StorageSecretLabel, or gets the label. The
// operator watches the metadata of opted-in Secrets only, in a cache of
// its own (the manager's holds only Helm's release Secrets, and one kind
// takes one label selector per cache); a Secret's event brings back the
// unfinished backups and restores of its namespace, found through a cache
// index. All of them, not only those whose status says they wait: the
// event may come before the cache shows the status that says so, and
// reconciling the others changes nothing. A Secret that appears without
// the label brings nothing back: the work stays Pending until it is
// labelled.

// secretWaitField indexes EchoBackups and EchoRestores that are not
// finished ("true"): those that may wait for a storage Secret.
const secretWaitField = ".status.unfinished"

// NewStorageSecretCache is the cache of the metadata of opted-in storage
// Secrets, in namespaces (all when empty), that the backup and restore
// controllers watch (their StorageSecrets). The manager runs it
// (manager.Add).
func NewStorageSecretCache(cfg *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, namespaces []string) (cache.Cache, error) {
	opts := cache.Options{
		Scheme: scheme, Mapper: mapper,
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{echov1alpha1.StorageSecretLabel: "true"}),
		// Anyone who may write Secrets can label any number of them: each
		// is kept as a stub of about 1 KiB, whatever its metadata holds.
		DefaultTransform: cachetrim.MetadataOnly(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the cache of storage Secrets: %w", err)
	}
	return c, nil
}

// indexSecretWaiters registers secretWaitField on obj's kind, for the
// objects waiting says may wait for a storage Secret.
func indexSecretWaiters(ctx context.Context, indexer client.FieldIndexer, obj client.Object, waiting func(client.Object) bool) error {
	err := indexer.IndexField(ctx, obj, secretWaitField, func(o client.Object) []string {
		if !waiting(o) {
			return nil
		}
		return []string{"true"}
	})
	if err != nil {
		return fmt.Errorf("indexing %T by the Secret it waits for: %w", obj, err)
	}
	return nil
}

// unfinished says whether conditions, alike for backups and restores,
// have neither Complete nor Failed True: the object may still wait for a
// storage Secret.
func unfinished(conditions []metav1.Condition) bool {
	return !meta.IsStatusConditionTrue(conditions, echov1alpha1.BackupConditionComplete) &&
		!meta.IsStatusConditionTrue(conditions, echov1alpha1.BackupConditionFailed)
}

// storageSecretSource is the events of opted-in Secrets in secrets,
// mapped to the unfinished objects of their namespace (listed as newList).
func storageSecretSource(secrets cache.Cache, c client.Reader, newList func() client.ObjectList) source.Source {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return source.Kind(secrets, secret, handler.TypedEnqueueRequestsFromMapFunc(
		func(ctx context.Context, s *metav1.PartialObjectMetadata) []reconcile.Request {
			return secretWaiters(ctx, c, newList(), s.Namespace)
		}))
}

// secretWaiters lists, into list, the unfinished objects of namespace.
func secretWaiters(ctx context.Context, c client.Reader, list client.ObjectList, namespace string) []reconcile.Request {
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{secretWaitField: "true"}); err != nil {
		log.FromContext(ctx).Error(err, "Listing what may wait for a storage Secret", "namespace", namespace)
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o.(client.Object))})
		return nil
	})
	return reqs
}
