package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of the live resources.
	GroupName = "live.echo.dev"
	// APIServiceName is the APIService that registers this group and
	// version with kube-apiserver's aggregation layer.
	APIServiceName = "v1alpha1." + GroupName
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource names a resource of the group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&EchoRevision{}, &EchoRevisionList{},
		&StoredBackup{}, &StoredBackupList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
