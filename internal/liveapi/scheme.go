package liveapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
)

var (
	// Scheme holds the live kinds and what the API server machinery needs
	// beside them.
	Scheme = runtime.NewScheme()
	// Codecs serve the live kinds.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	utilruntime.Must(livev1alpha1.AddToScheme(Scheme))
	// The API server machinery converts every object to the group's
	// internal version and back. The live kinds have one form only, so
	// their Go types are the internal version too, and converting is a
	// copy.
	Scheme.AddKnownTypes(schema.GroupVersion{Group: livev1alpha1.GroupName, Version: runtime.APIVersionInternal},
		&livev1alpha1.EchoRevision{}, &livev1alpha1.EchoRevisionList{},
		&livev1alpha1.StoredBackup{}, &livev1alpha1.StoredBackupList{},
	)
	utilruntime.Must(Scheme.AddFieldLabelConversionFunc(livev1alpha1.GroupVersion.WithKind("EchoRevision"), echoFieldLabel))
	utilruntime.Must(Scheme.AddFieldLabelConversionFunc(livev1alpha1.GroupVersion.WithKind("StoredBackup"), echoFieldLabel))
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	Scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

// echoField is the field selector that narrows a list to one Echo:
// `--field-selector echo=NAME`.
const echoField = "echo"

// echoFieldLabel admits the field selectors the live lists support.
func echoFieldLabel(label, value string) (string, string, error) {
	switch label {
	case echoField, "metadata.name", "metadata.namespace":
		return label, value, nil
	}
	return "", "", fieldSelectorError(label)
}

// objectFields are the fields of an object that field selectors match.
func objectFields(meta metav1.ObjectMeta, echo string) fields.Set {
	return fields.Set{"metadata.name": meta.Name, "metadata.namespace": meta.Namespace, echoField: echo}
}
