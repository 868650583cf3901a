package liveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// echoRevisions serves EchoRevisions: lists from the cached release
// records, a get of one revision from its record on the API server.
type echoRevisions struct {
	// cache holds the release records as releaserecords.CacheTransform
	// keeps them: labels, verdict, summary.
	cache client.Reader
	// api reads a whole record for a get.
	api      client.Reader
	verifier *releasetrust.Signer
	readOnlyResource
}

var echoRevisionsResource = livev1alpha1.Resource(livev1alpha1.EchoRevisionResource)

func (*echoRevisions) New() runtime.Object     { return &livev1alpha1.EchoRevision{} }
func (*echoRevisions) NewList() runtime.Object { return &livev1alpha1.EchoRevisionList{} }
func (*echoRevisions) Kind() string            { return "EchoRevision" }
func (*echoRevisions) GetSingularName() string { return "echorevision" }
func (*echoRevisions) ShortNames() []string    { return []string{"erev"} }

// List lists the revisions of the request's namespace, or of every
// namespace whose Echoes the user may get.
func (s *echoRevisions) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	q, err := s.listQuery(ctx, opts)
	if err != nil {
		return nil, err
	}
	revisions, err := releaserecords.CachedRevisions(ctx, s.cache, q.namespace)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	namespaces := s.access.filter()
	items := make([]livev1alpha1.EchoRevision, 0, len(revisions))
	for i := range revisions {
		r := echoRevision(&revisions[i])
		if !q.matches(&r.ObjectMeta, objectFields(r.ObjectMeta, r.Echo)) {
			continue
		}
		ok, err := namespaces.allows(ctx, r.Namespace)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		items = append(items, r)
	}
	list := &livev1alpha1.EchoRevisionList{}
	list.Items, list.Continue = page(items, func(r *livev1alpha1.EchoRevision) *metav1.ObjectMeta { return &r.ObjectMeta }, q)
	return list, nil
}

// Get reads one revision whole: with its values and manifest.
func (s *echoRevisions) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	if err := s.access.require(ctx, echoRevisionsResource, name, namespace); err != nil {
		return nil, err
	}
	echo, version, ok := parseRevisionName(name)
	if !ok {
		return nil, apierrors.NewNotFound(echoRevisionsResource, name)
	}
	revisions, err := releaserecords.CachedReleaseRevisions(ctx, s.cache, namespace, echo)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	for i := range revisions {
		if revisions[i].Version == version {
			return s.whole(ctx, &revisions[i])
		}
	}
	return nil, apierrors.NewNotFound(echoRevisionsResource, name)
}

// whole adds to a cached revision the values and manifest of its record.
func (s *echoRevisions) whole(ctx context.Context, r *releaserecords.Revision) (*livev1alpha1.EchoRevision, error) {
	rel, err := releaserecords.ReadRevision(ctx, s.api, s.verifier, r.Namespace, r.Record)
	switch {
	case apierrors.IsNotFound(err), errors.Is(err, releaserecords.ErrNotVerified):
		// Superseded and pruned, or replaced, since the cache saw it.
		return nil, apierrors.NewNotFound(echoRevisionsResource, revisionName(r.Release, r.Version))
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	out := echoRevision(r)
	values, err := json.Marshal(rel.Config)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("encoding the values of %s: %w", out.Name, err))
	}
	out.Values = &runtime.RawExtension{Raw: values}
	out.Manifest = rel.Manifest
	return &out, nil
}

// echoRevision is the listed form of a cached revision.
func echoRevision(r *releaserecords.Revision) livev1alpha1.EchoRevision {
	sum := r.Summary
	out := livev1alpha1.EchoRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:              revisionName(r.Release, r.Version),
			Namespace:         r.Namespace,
			Labels:            map[string]string{livev1alpha1.EchoLabel: r.Release},
			CreationTimestamp: metav1.NewTime(sum.LastDeployed),
		},
		Echo:         r.Release,
		Revision:     r.Version,
		Status:       string(r.Status),
		Description:  sum.Description,
		Chart:        sum.Chart + "-" + sum.ChartVersion,
		ChartVersion: sum.ChartVersion,
		AppVersion:   sum.AppVersion,
	}
	if !sum.FirstDeployed.IsZero() {
		out.FirstDeployed = &metav1.Time{Time: sum.FirstDeployed}
	}
	if !sum.LastDeployed.IsZero() {
		out.LastDeployed = &metav1.Time{Time: sum.LastDeployed}
	}
	return out
}

// revisionSeparator joins an Echo's name and a revision: demo.v3. Echo
// names hold no dots, so the name splits back unambiguously.
const revisionSeparator = ".v"

func revisionName(echo string, version int) string {
	return echo + revisionSeparator + strconv.Itoa(version)
}

func parseRevisionName(name string) (echo string, version int, ok bool) {
	i := strings.LastIndex(name, revisionSeparator)
	if i <= 0 {
		return "", 0, false
	}
	version, err := strconv.Atoi(name[i+len(revisionSeparator):])
	if err != nil || version <= 0 || revisionName(name[:i], version) != name {
		return "", 0, false
	}
	return name[:i], version, true
}

// echoRevisionTable is kubectl's view of EchoRevisions.
var echoRevisionTable = tableConvertor[livev1alpha1.EchoRevision]{
	tableColumns: tableColumns[livev1alpha1.EchoRevision]{
		columns: []metav1.TableColumnDefinition{
			column("Name", "string", "The Echo's name and the revision.", 0),
			column("Echo", "string", "The Echo.", 0),
			column("Revision", "integer", "The release revision.", 0),
			column("Status", "string", "Helm's status of the revision.", 0),
			column("Chart", "string", "The chart's name and version.", 0),
			column("App Version", "string", "The echo server version the chart deploys.", 0),
			column("Deployed", "string", "Time since the revision was deployed.", 0),
			column("Description", "string", "What the revision did.", 1),
		},
		cells: func(r *livev1alpha1.EchoRevision, now time.Time) []any {
			return []any{r.Name, r.Echo, int64(r.Revision), r.Status, r.Chart, r.AppVersion, age(r.LastDeployed, now), r.Description}
		},
	},
	items: func(o runtime.Object) ([]livev1alpha1.EchoRevision, bool) {
		switch o := o.(type) {
		case *livev1alpha1.EchoRevision:
			return []livev1alpha1.EchoRevision{*o}, true
		case *livev1alpha1.EchoRevisionList:
			return o.Items, true
		}
		return nil, false
	},
}

// ConvertToTable shows EchoRevisions as kubectl get does.
func (*echoRevisions) ConvertToTable(ctx context.Context, object, options runtime.Object) (*metav1.Table, error) {
	return echoRevisionTable.ConvertToTable(ctx, object, options)
}
