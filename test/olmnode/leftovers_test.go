package olmnode

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkNothingLeft waits until an uninstall, whichever way it was done,
// has left nothing of the operator at cluster scope: no CRD of echo.dev,
// no APIService of the live API, no ClusterRole or ClusterRoleBinding
// named echo-operator... or labelled as an echo-operator CSV's
// (olm.owner), and none of the namespaces given. The namespaced objects
// went with their namespace, whose deletion the caller has waited for.
func checkNothingLeft(t *testing.T, namespaces ...string) {
	t.Helper()
	must(t, poll(context.Background(), installTimeout, "nothing of the operator left", func(ctx context.Context) (bool, string, error) {
		left, err := operatorLeftovers(ctx, namespaces)
		return len(left) == 0, strings.Join(left, ", "), err
	}))
}

// operatorLeftovers names what of the operator the cluster still holds.
func operatorLeftovers(ctx context.Context, namespaces []string) ([]string, error) {
	var left []string
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := k8sClient.List(ctx, crds); err != nil {
		return nil, err
	}
	for _, crd := range crds.Items {
		if strings.HasSuffix(crd.GetName(), ".echo.dev") {
			left = append(left, "CRD "+crd.GetName())
		}
	}
	apiServices := &unstructured.UnstructuredList{}
	apiServices.SetGroupVersionKind(apiServiceKind.GroupVersion().WithKind("APIServiceList"))
	if err := k8sClient.List(ctx, apiServices); err != nil {
		return nil, err
	}
	for _, s := range apiServices.Items {
		if strings.HasSuffix(s.GetName(), ".echo.dev") {
			left = append(left, "APIService "+s.GetName())
		}
	}
	roles, err := clientset.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range roles.Items {
		if isOperators(r.ObjectMeta) {
			left = append(left, "ClusterRole "+r.Name)
		}
	}
	bindings, err := clientset.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, b := range bindings.Items {
		if isOperators(b.ObjectMeta) {
			left = append(left, "ClusterRoleBinding "+b.Name)
		}
	}
	for _, ns := range namespaces {
		if _, err := clientset.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			left = append(left, "namespace "+ns)
		}
	}
	return left, nil
}

// isOperators says whether a cluster-scoped object is the operator's: named
// after it, or owned by one of its CSVs.
func isOperators(m metav1.ObjectMeta) bool {
	return strings.HasPrefix(m.Name, "echo-operator") || strings.HasPrefix(m.Labels["olm.owner"], "echo-operator")
}
