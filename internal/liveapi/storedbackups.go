package liveapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
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

// maxBackupsPerList bounds the stored backups of one list response,
// whatever limit it asks for: past it the list has a continue token, as a
// page of a longer list.
const maxBackupsPerList = 20_000

// List lists the backups of every EchoBackupLocation of the request's
// namespace (of every namespace whose EchoBackups the user may get), or of
// one location when the label selector names it. A list of one location
// fails when its storage cannot be read; a list of several reads them at
// once, and shows those it could, with a warning for each of the others.
func (s *storedBackups) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	q, err := s.listQuery(ctx, opts)
	if err != nil {
		return nil, err
	}
	// A selector naming one location reads only that one's storage.
	only, onlyOne := q.labels.RequiresExactMatch(livev1alpha1.LocationLabel)
	locations, err := s.readableLocations(ctx, q.namespace, only, onlyOne)
	if err != nil {
		return nil, err
	}
	collected := newPageCollector(q, maxBackupsPerList, func(b *livev1alpha1.StoredBackup) *metav1.ObjectMeta { return &b.ObjectMeta })
	add := func(loc *echov1alpha1.EchoBackupLocation, listing locationListing) {
		for _, b := range listing.backups {
			if sb, ok := storedBackup(loc, b); ok && q.matches(&sb.ObjectMeta, objectFields(sb.ObjectMeta, sb.Source.Name)) {
				collected.add(sb)
			}
		}
		if listing.cut {
			warning.AddWarning(ctx, "", cutWarning(loc, s.listings.limits))
		}
	}
	if onlyOne {
		for _, loc := range locations {
			listing, err := s.listings.list(ctx, loc)
			if err != nil {
				return nil, err
			}
			add(loc, listing)
		}
	} else {
		s.listEach(ctx, locations, func(loc *echov1alpha1.EchoBackupLocation, listing locationListing, err error) {
			if err != nil {
				warning.AddWarning(ctx, "", err.Error()+": its backups are not listed")
				return
			}
			add(loc, listing)
		})
	}
	list := &livev1alpha1.StoredBackupList{}
	list.Items, list.Continue = collected.page()
	if list.Continue != "" && (q.limit <= 0 || q.limit > maxBackupsPerList) {
		warning.AddWarning(ctx, "", fmt.Sprintf("a list holds at most %d stored backups: the next ones come with the next page (continue)", maxBackupsPerList))
	}
	return list, nil
}

// readableLocations are the EchoBackupLocations of namespace (all
// namespaces when empty) that the user may read, only the one named only
// when onlyOne, in the order of their namespaces and names.
func (s *storedBackups) readableLocations(ctx context.Context, namespace, only string, onlyOne bool) ([]*echov1alpha1.EchoBackupLocation, error) {
	list := &echov1alpha1.EchoBackupLocationList{}
	if err := s.cache.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("listing the EchoBackupLocations: %w", err))
	}
	namespaces := s.access.filter()
	var out []*echov1alpha1.EchoBackupLocation
	for i := range list.Items {
		loc := &list.Items[i]
		if onlyOne && loc.Name != only {
			continue
		}
		ok, err := namespaces.allows(ctx, loc.Namespace)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, loc)
		}
	}
	slices.SortFunc(out, func(a, b *echov1alpha1.EchoBackupLocation) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// listEach lists the locations at once, each within its own bounds (see
// locationListings.list), and hands each listing, or its error, to fn in
// the caller's goroutine as it comes.
func (s *storedBackups) listEach(ctx context.Context, locations []*echov1alpha1.EchoBackupLocation, fn func(*echov1alpha1.EchoBackupLocation, locationListing, error)) {
	type result struct {
		loc     *echov1alpha1.EchoBackupLocation
		listing locationListing
		err     error
	}
	results := make(chan result)
	for _, loc := range locations {
		go func() {
			listing, err := s.listings.list(ctx, loc)
			results <- result{loc: loc, listing: listing, err: err}
		}()
	}
	for range locations {
		r := <-results
		fn(r.loc, r.listing, r.err)
	}
}

// cutWarning says that loc's listing stopped at the limits.
func cutWarning(loc *echov1alpha1.EchoBackupLocation, limits listingLimits) string {
	return fmt.Sprintf("EchoBackupLocation %s/%s: its storage holds more than a listing reads (%d objects, %d pages): "+
		"only the backups of the objects listed before are shown", loc.Namespace, loc.Name, limits.objects, limits.pages)
}

// Get reads one stored backup: from the listing of its location, which
// fails the request when its storage cannot be read.
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
	listing, err := s.listings.list(ctx, loc)
	if err != nil {
		return nil, err
	}
	for _, b := range listing.backups {
		if b.Key == key {
			if sb, ok := storedBackup(loc, b); ok {
				return &sb, nil
			}
		}
	}
	if listing.cut {
		warning.AddWarning(ctx, "", cutWarning(loc, s.listings.limits))
	}
	return nil, apierrors.NewNotFound(storedBackupsResource, name)
}

// storedBackup is the object of a backup found in loc; false for an
// artifact whose key is not of the operator's layout.
func storedBackup(loc *echov1alpha1.EchoBackupLocation, b backupstore.StoredBackup) (livev1alpha1.StoredBackup, bool) {
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
