//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// kubectl runs the real kubectl against the simulated cluster and returns
// its combined output.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", cluster.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

// The verbs users type name an Echo by the singular resource name, as the
// README and the docs do: "echo" must name the kind, not a category too
// (kubectl then refuses "get echo NAME" with "you must specify only one
// resource"). The operator's kinds share the category echo-operator.
func TestKubectlNamesEchoesAsTheDocsDo(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "hello"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
	waitReady(t, key, 1)

	Expect(kubectl(t, "-n", ns, "get", "echo", "hello")).To(MatchRegexp(`(?m)^hello\s+True`))
	Expect(kubectl(t, "-n", ns, "get", "echo", "-o", "wide")).To(ContainSubstring("hello"))
	Expect(kubectl(t, "-n", ns, "describe", "echo", "hello")).To(MatchRegexp(`(?m)^Name:\s+hello$`))
	kubectl(t, "-n", ns, "patch", "echo", "hello", "--type=merge", "-p", `{"spec":{"message":"patched"}}`)
	Expect(getEcho(Default, key).Spec.Message).To(Equal("patched"))
	Expect(kubectl(t, "-n", ns, "get", "echo-operator")).To(ContainSubstring("echo.echo.dev/hello"))
}
