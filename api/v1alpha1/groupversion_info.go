package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "echo.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// EventReasonUndecodableObject is the reason of the Warning Event recorded
// on an object of any of the group's kinds that the operator cannot read
// (a value the schema admits but the operator's types refuse); the
// operator ignores the object until it is fixed.
const EventReasonUndecodableObject = "UndecodableObject"
