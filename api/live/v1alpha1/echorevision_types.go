package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// EchoRevisionResource is the resource name of EchoRevision.
	EchoRevisionResource = "echorevisions"

	// EchoLabel, on an EchoRevision or a StoredBackup, names the Echo it
	// belongs to: `kubectl get echorevisions -l live.echo.dev/echo=NAME`
	// lists one Echo's history.
	EchoLabel = "live.echo.dev/echo"
)

// EchoRevision is one revision of an Echo's Helm release: what the operator
// deployed, when, from which chart, with which values. It is read from the
// release records the operator wrote and signed (records anyone else wrote
// are never shown), and is not stored anywhere.
//
// Its name is <echo>.v<revision>, e.g. demo.v3. Lists carry the summary;
// values and manifest come only with a get of one revision.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type EchoRevision struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The creation timestamp is when the
	// revision was first deployed; the labels name the Echo.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Echo is the name of the Echo (and of its Helm release).
	Echo string `json:"echo"`

	// Revision is the release revision, counted from 1.
	Revision int `json:"revision"`

	// Status is Helm's status of the revision: deployed, superseded,
	// failed, pending-install, pending-upgrade, pending-rollback or
	// uninstalling.
	Status string `json:"status"`

	// Description is Helm's summary of what the revision did, e.g.
	// "Install complete" or the error of a failed upgrade.
	// +optional
	Description string `json:"description,omitempty"`

	// Chart is the chart's name and version, e.g. echo-0.1.0.
	Chart string `json:"chart"`

	// ChartVersion is the chart's version.
	ChartVersion string `json:"chartVersion"`

	// AppVersion is the version of the echo server the chart deploys.
	// +optional
	AppVersion string `json:"appVersion,omitempty"`

	// FirstDeployed is when the release was first deployed.
	// +optional
	FirstDeployed *metav1.Time `json:"firstDeployed,omitempty"`

	// LastDeployed is when this revision was deployed.
	// +optional
	LastDeployed *metav1.Time `json:"lastDeployed,omitempty"`

	// Values are the values the chart was rendered with: the Echo's spec
	// as the operator passed it. Only in a get of one revision.
	// +optional
	Values *runtime.RawExtension `json:"values,omitempty"`

	// Manifest is the rendered manifest of the revision, the objects it
	// deployed as YAML. Only in a get of one revision.
	// +optional
	Manifest string `json:"manifest,omitempty"`
}

// EchoRevisionList is a list of EchoRevision.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type EchoRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the revisions, by namespace, Echo and revision.
	Items []EchoRevision `json:"items"`
}
