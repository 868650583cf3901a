package controllers

import (
	"fmt"
	"strconv"

	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// echoWorld is what the Echo controller observes of an Echo's children.
// A nil pointer means the object does not exist.
type echoWorld struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	ingress    *networkingv1.Ingress
	// untrustedRecords names the release Secrets of the Echo that did not
	// verify.
	untrustedRecords []string
	// deployed is the release's deployed revision, as the cache holds it.
	deployed *release.Release
}

// workloadStatus is the part of an Echo's status the Echo controller owns.
type workloadStatus struct {
	observedGeneration int64
	ready              metav1.Condition
	releaseRecords     metav1.Condition
	deployed           metav1.Condition
	releaseName        string
	replicas           int32
	readyReplicas      int32
	availableReplicas  int32
	updatedReplicas    int32
	selector           string
	address            string
	externalAddress    string
}

// computeWorkloadStatus derives the workload status of an Echo from its
// children. It is pure, and it is built from the world alone, never from
// the status it replaces (but for the transition time of Ready and the
// observed generation, which only the Deployment can advance).
func computeWorkloadStatus(echo *echov1alpha1.Echo, w echoWorld, now metav1.Time) workloadStatus {
	st := workloadStatus{observedGeneration: echo.Status.ObservedGeneration}
	status, reason, message := readiness(echo, w)

	if d := w.deployment; d != nil {
		st.replicas = d.Status.Replicas
		st.readyReplicas = d.Status.ReadyReplicas
		st.availableReplicas = d.Status.AvailableReplicas
		st.updatedReplicas = d.Status.UpdatedReplicas
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && d.Spec.Selector != nil {
			st.selector = sel.String()
		}
		if gen, ok := specGeneration(d); ok {
			st.observedGeneration = gen
		}
	}
	st.address, st.externalAddress = addresses(w)

	st.ready = metav1.Condition{
		Type:               echov1alpha1.EchoConditionReady,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: echo.Generation,
	}
	st.releaseRecords = releaseRecordsCondition(echo, w.untrustedRecords)
	st.deployed, st.releaseName = deployedCondition(w.deployed)
	st.ready.LastTransitionTime = transitionTime(echo, st.ready, now)
	st.releaseRecords.LastTransitionTime = transitionTime(echo, st.releaseRecords, now)
	st.deployed.LastTransitionTime = transitionTime(echo, st.deployed, now)
	return st
}

// transitionTime keeps a condition's last transition time while its status
// holds.
func transitionTime(echo *echov1alpha1.Echo, c metav1.Condition, now metav1.Time) metav1.Time {
	if prev := meta.FindStatusCondition(echo.Status.Conditions, c.Type); prev != nil && prev.Status == c.Status {
		return prev.LastTransitionTime
	}
	return now
}

// readiness decides the Ready condition, from the most to the least
// fundamental reason an Echo can fail to serve.
func readiness(echo *echov1alpha1.Echo, w echoWorld) (metav1.ConditionStatus, string, string) {
	conds := echo.Status.Conditions
	if c := meta.FindStatusCondition(conds, echov1alpha1.EchoConditionPaused); c != nil && c.Status == metav1.ConditionTrue {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonPaused, "Reconciliation of the release is paused by the echo.dev/pause-reconcile annotation"
	}
	if restore := echo.Annotations[echov1alpha1.RestoreAnnotation]; restore != "" {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonRestoring,
			fmt.Sprintf("EchoRestore %s is writing the data: the echo server is scaled to zero until it is in place", restore)
	}
	for _, t := range []string{echov1alpha1.EchoConditionReleaseFailed, echov1alpha1.EchoConditionIrreconcilable} {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionTrue {
			return metav1.ConditionFalse, echov1alpha1.EchoReasonReleaseFailed, "The Helm release failed: " + c.Message
		}
	}
	d := w.deployment
	if d == nil {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonReleasePending, "Waiting for the release to create the Deployment"
	}
	if gen, ok := specGeneration(d); !ok || gen != echo.Generation {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonReleasePending,
			fmt.Sprintf("Waiting for the release of generation %d (the Deployment renders generation %s)", echo.Generation, d.Annotations[echov1alpha1.SpecGenerationAnnotation])
	}
	if c := deploymentCondition(d, appsv1.DeploymentProgressing); c != nil && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonDeploymentFailed, "The Deployment exceeded its progress deadline: " + c.Message
	}
	desired := desiredReplicas(echo, d)
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas < desired || s.AvailableReplicas < desired || s.Replicas > s.UpdatedReplicas {
		return metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut,
			fmt.Sprintf("%d of %d replicas updated and available", min(s.UpdatedReplicas, s.AvailableReplicas), desired)
	}
	if desired == 0 {
		return metav1.ConditionTrue, echov1alpha1.EchoReasonScaledToZero, "Scaled to zero replicas"
	}
	return metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable, fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, desired)
}

// desiredReplicas is what the Deployment must have available: what the
// Echo asks for (echov1alpha1.EchoSpec.DesiredReplicas), not what the
// Deployment says, which lags behind a release still on its way (a restore
// giving a quiesced Echo back, for one). Under an autoscaler it is the
// Deployment's count, at least the autoscaler's minimum, which a
// Deployment created with a single replica reaches only after the
// autoscaler's first sync.
func desiredReplicas(echo *echov1alpha1.Echo, d *appsv1.Deployment) int32 {
	want := echo.Spec.DesiredReplicas()
	if want.Autoscaled {
		return max(ptr.Deref(d.Spec.Replicas, 1), want.MinReplicas)
	}
	return want.Replicas
}

// specGeneration reads the Echo generation a Deployment was rendered from.
func specGeneration(d *appsv1.Deployment) (int64, bool) {
	gen, err := strconv.ParseInt(d.Annotations[echov1alpha1.SpecGenerationAnnotation], 10, 64)
	return gen, err == nil
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// addresses gives the in-cluster URL of the Service and the URL reachable
// from outside, when there is one.
func addresses(w echoWorld) (internal, external string) {
	svc := w.service
	if svc == nil || len(svc.Spec.Ports) == 0 {
		return "", ""
	}
	port := svc.Spec.Ports[0].Port
	internal = fmt.Sprintf("http://%s.%s.svc:%d", svc.Name, svc.Namespace, port)

	if ing := w.ingress; ing != nil && len(ing.Spec.Rules) > 0 && ing.Spec.Rules[0].Host != "" {
		scheme := "http"
		if len(ing.Spec.TLS) > 0 {
			scheme = "https"
		}
		return internal, scheme + "://" + ing.Spec.Rules[0].Host
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, lb := range svc.Status.LoadBalancer.Ingress {
			host := lb.Hostname
			if host == "" {
				host = lb.IP
			}
			if host != "" {
				return internal, fmt.Sprintf("http://%s:%d", host, port)
			}
		}
	}
	return internal, ""
}

// current reads the workload status an Echo holds now.
func currentWorkloadStatus(echo *echov1alpha1.Echo) workloadStatus {
	st := workloadStatus{
		observedGeneration: echo.Status.ObservedGeneration,
		replicas:           echo.Status.Replicas,
		readyReplicas:      echo.Status.ReadyReplicas,
		availableReplicas:  echo.Status.AvailableReplicas,
		updatedReplicas:    echo.Status.UpdatedReplicas,
		selector:           echo.Status.Selector,
		address:            echo.Status.Address,
		externalAddress:    echo.Status.ExternalAddress,
	}
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		st.ready = *c
	}
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReleaseRecordsVerified); c != nil {
		st.releaseRecords = *c
	}
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionDeployed); c != nil {
		st.deployed = *c
	}
	if echo.Status.DeployedRelease != nil {
		st.releaseName = echo.Status.DeployedRelease.Name
	}
	return st
}

// toApplyMap renders the workload status as the status of a server-side
// apply request. Zero values are left out, which releases those fields.
func (st workloadStatus) toApplyMap() map[string]any {
	// A Condition always converts; the error is for types that cannot.
	ready, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&st.ready)
	records, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&st.releaseRecords)
	deployed, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&st.deployed)
	out := map[string]any{"conditions": []any{ready, records, deployed}}
	setIf := func(key string, v any, zero bool) {
		if !zero {
			out[key] = v
		}
	}
	setIf("observedGeneration", st.observedGeneration, st.observedGeneration == 0)
	setIf("replicas", st.replicas, st.replicas == 0)
	setIf("readyReplicas", st.readyReplicas, st.readyReplicas == 0)
	setIf("availableReplicas", st.availableReplicas, st.availableReplicas == 0)
	setIf("updatedReplicas", st.updatedReplicas, st.updatedReplicas == 0)
	setIf("selector", st.selector, st.selector == "")
	setIf("address", st.address, st.address == "")
	setIf("externalAddress", st.externalAddress, st.externalAddress == "")
	setIf("deployedRelease", map[string]any{"name": st.releaseName}, st.releaseName == "")
	return out
}
