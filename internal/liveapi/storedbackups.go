package liveapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/datamover"
)

// storedBackups serves StoredBackups: the backups in the storage of the
// EchoBackupLocations of a namespace, read from the storage (see
// locationListings).
type storedBackups struct {
	// cache holds the EchoBackupLocations.
	cache    client.Reader
	listings *locationListings
	readOnlyResource
}

var storedBackupsResource = livev1alpha1.Resource(livev1alpha1.StoredBackupResource)

func (*storedBackups) New() runtime.Object     { return &livev1alpha1.StoredBackup{} }
func (*storedBackups) NewList() runtime.Object { return &livev1alpha1.StoredBackupList{} }
func (*storedBackups) Kind() string            { return "StoredBackup" }
func (*storedBackups) GetSingularName() string { return "storedbackup" }
func (*storedBackups) ShortNames() []string    { return []string{"sb"} }

// List lists the backups of every EchoBackupLocation of the request's
// namespace (of every namespace whose EchoBackups the user may get), or of
// one location when the label selector names it.
func (s *storedBackups) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	q, err := s.listQuery(ctx, opts)
	if err != nil {
		return nil, err
	}
	locations := &echov1alpha1.EchoBackupLocationList{}
	if err := s.cache.List(ctx, locations, client.InNamespace(q.namespace)); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing the EchoBackupLocations: %w", err))
	}
	// A selector naming one location reads only that one's storage.
	only, onlyOne := q.labels.RequiresExactMatch(livev1alpha1.LocationLabel)
	namespaces := s.access.filter()
	var items []livev1alpha1.StoredBackup
	for i := range locations.Items {
		loc := &locations.Items[i]
		if onlyOne && loc.Name != only {
			continue
		}
		ok, err := namespaces.allows(ctx, loc.Namespace)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		backups, err := s.listings.list(ctx, loc)
		if err != nil {
			return nil, err
		}
		for _, b := range backups {
			if sb, ok := storedBackup(loc, b); ok && q.matches(&sb.ObjectMeta, objectFields(sb.ObjectMeta, sb.Source.Name)) {
				items = append(items, sb)
			}
		}
	}
	list := &livev1alpha1.StoredBackupList{}
	list.Items, list.Continue = page(items, func(b *livev1alpha1.StoredBackup) *metav1.ObjectMeta { return &b.ObjectMeta }, q)
	return list, nil
}

// Get reads one stored backup: from the listing of its location.
func (s *storedBackups) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	if err := s.access.require(ctx, storedBackupsResource, name, namespace); err != nil {
		return nil, err
	}
	location, key, ok := livev1alpha1.ParseStoredBackupName(name)
	if !ok {
		return nil, apierrors.NewNotFound(storedBackupsResource, name)
	}
	loc := &echov1alpha1.EchoBackupLocation{}
	if err := s.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: location}, loc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(storedBackupsResource, name)
		}
		return nil, apierrors.NewInternalError(err)
	}
	backups, err := s.listings.list(ctx, loc)
	if err != nil {
		return nil, err
	}
	for _, b := range backups {
		if b.Key == key {
			if sb, ok := storedBackup(loc, b); ok {
				return &sb, nil
			}
		}
	}
	return nil, apierrors.NewNotFound(storedBackupsResource, name)
}

// storedBackup is the object of a backup found in loc; false for an
// artifact whose key is not of the operator's layout.
func storedBackup(loc *echov1alpha1.EchoBackupLocation, b datamover.StoredBackup) (livev1alpha1.StoredBackup, bool) {
	name, ok := livev1alpha1.StoredBackupName(loc.Name, b.Key)
	if !ok {
		return livev1alpha1.StoredBackup{}, false
	}
	keyNamespace, keyEcho, keyBackup := splitKey(b.Key)
	out := livev1alpha1.StoredBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         loc.Namespace,
			CreationTimestamp: metav1.NewTime(b.CreatedAt),
			Labels:            map[string]string{livev1alpha1.LocationLabel: loc.Name, livev1alpha1.EchoLabel: keyEcho},
		},
		Location:      loc.Name,
		Key:           b.Key,
		Source:        livev1alpha1.StoredBackupSource{Namespace: keyNamespace, Name: keyEcho, Backup: keyBackup},
		Size:          b.ArchiveSize,
		Files:         b.Files,
		FormatVersion: b.FormatVersion,
		Verified:      b.Problem == "",
		Message:       b.Problem,
	}
	return out, true
}

// storedBackupTable is kubectl's view of StoredBackups.
var storedBackupTable = tableConvertor[livev1alpha1.StoredBackup]{
	tableColumns: tableColumns[livev1alpha1.StoredBackup]{
		columns: []metav1.TableColumnDefinition{
			column("Name", "string", "The location and the key of the backup: restore it by this name.", 0),
			column("Echo", "string", "The namespace and name of the Echo the backup was taken from.", 0),
			column("Size", "string", "The archive's size.", 0),
			column("Files", "integer", "The files of the Echo's data the backup holds.", 0),
			column("Verified", "boolean", "Whether the manifest decodes and the archive is there with the recorded size.", 0),
			column("Age", "string", "Time since the backup was taken.", 0),
			column("Location", "string", "The EchoBackupLocation.", 1),
			column("Key", "string", "The key in the location's storage.", 1),
			column("Format", "integer", "The backup format version.", 1),
			column("Message", "string", "Why the backup is not verified.", 1),
		},
		cells: func(b *livev1alpha1.StoredBackup, now time.Time) []any {
			return []any{b.Name, b.Source.Namespace + "/" + b.Source.Name, humanBytes(b.Size),
				int64(b.Files), b.Verified, age(&b.CreationTimestamp, now), b.Location, b.Key, int64(b.FormatVersion), b.Message}
		},
	},
	items: func(o runtime.Object) ([]livev1alpha1.StoredBackup, bool) {
		switch o := o.(type) {
		case *livev1alpha1.StoredBackup:
			return []livev1alpha1.StoredBackup{*o}, true
		case *livev1alpha1.StoredBackupList:
			return o.Items, true
		}
		return nil, false
	},
}

// ConvertToTable shows StoredBackups as kubectl get does.
func (*storedBackups) ConvertToTable(ctx context.Context, object, options runtime.Object) (*metav1.Table, error) {
	return storedBackupTable.ConvertToTable(ctx, object, options)
}

// splitKey splits a key of the operator's layout,
// <namespace>/<echo>/<backup>.
func splitKey(key string) (namespace, echo, backup string) {
	parts := strings.SplitN(key, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// humanBytes is n bytes for people: 812B, 1.4KiB, 3.0GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
