//go:build linux

package olm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/echoserver"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// operatorProcess is the manager binary run out of cluster as the pod of
// OLM's Deployment would run it: the container's arguments and environment
// and the pod's ServiceAccount.
type operatorProcess struct {
	*process
	env map[string]string
}

var forbiddenLine = regexp.MustCompile(`(?i)forbidden`)

// forbidden returns the lines of the operator's log that report a request
// the API server refused for lack of permissions (shortened).
func (op *operatorProcess) forbidden() []string {
	raw, err := os.ReadFile(op.logPath)
	Expect(err).NotTo(HaveOccurred())
	var lines []string
	for _, line := range strings.Split(string(raw), "\n") {
		if forbiddenLine.MatchString(line) {
			if len(line) > 400 {
				line = line[:400] + "..."
			}
			lines = append(lines, line)
		}
	}
	return lines
}

// expectHealthy, called from the function Eventually polls, ends the wait
// at once when the operator has exited or lacks a permission: waiting on
// would only time out.
func (op *operatorProcess) expectHealthy() {
	if !op.running() {
		StopTrying("the operator exited; see " + op.logPath).Now()
	}
	if lines := op.forbidden(); len(lines) > 0 {
		StopTrying("the operator lacks permissions:\n" + strings.Join(lines, "\n")).Now()
	}
}

// startOperatorAsDeployment runs the manager binary in place of a pod of
// the Deployment OLM created, as the kubelet would run its container: with
// the container's arguments, its environment (fieldRefs resolved against
// that pod, emptyDir mounts mapped to temporary directories) and a token
// of the pod's ServiceAccount, not the cluster admin's credentials. It
// runs from the repository root, where watches.yaml and the chart are, as
// the image's working directory holds them. It is stopped when the test
// ends.
func startOperatorAsDeployment(t *testing.T, dep *appsv1.Deployment, envOverrides map[string]string) *operatorProcess {
	t.Helper()
	ctx := context.Background()
	pod := runningPodOf(t, dep)
	container := pod.Spec.Containers[0]
	if name := pod.Annotations["kubectl.kubernetes.io/default-container"]; name != "" {
		for _, c := range pod.Spec.Containers {
			if c.Name == name {
				container = c
			}
		}
	}

	tr, err := clientset.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "requesting a token of ServiceAccount %s/%s", pod.Namespace, pod.Spec.ServiceAccountName)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	Expect(writeTokenKubeconfig(kubeconfig, tr.Status.Token)).To(Succeed())

	env := containerEnv(t, pod, container)
	for k, v := range envOverrides {
		env[k] = v
	}
	envList := []string{"KUBECONFIG=" + kubeconfig}
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	// In a pod, the leader election namespace defaults to the pod's own,
	// read from the mounted ServiceAccount; out of cluster it is a flag.
	args := append(mountedSecretArgs(t, pod, container), "--leader-election-namespace="+pod.Namespace)
	// kube-apiserver reaches the live API at the addresses of the
	// Deployment's pods (aggregator routing): they are brought up on this
	// network namespace's loopback, where the manager listens.
	for _, ip := range podIPs(t, dep) {
		Expect(addLoopbackAddress(ip)).To(Succeed())
	}
	p, err := processes.start("manager", manager, envList, args...)
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = p.stop() })
	return &operatorProcess{process: p, env: env}
}

// mountedSecretArgs returns the container's arguments with the paths
// under its Secret mounts (as OLM mounts the live API's certificate)
// pointing at a temporary directory holding the Secret's keys, as the
// kubelet would project them.
func mountedSecretArgs(t *testing.T, pod *corev1.Pod, c corev1.Container) []string {
	t.Helper()
	args := append([]string{}, c.Args...)
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			secret := &corev1.Secret{}
			Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: v.Secret.SecretName}, secret)).To(Succeed())
			dir := t.TempDir()
			files := map[string]string{}
			for k := range secret.Data {
				files[k] = k
			}
			if len(v.Secret.Items) > 0 {
				files = map[string]string{}
				for _, item := range v.Secret.Items {
					files[item.Key] = item.Path
				}
			}
			for key, path := range files {
				Expect(os.WriteFile(filepath.Join(dir, path), secret.Data[key], 0o600)).To(Succeed())
			}
			for i, a := range args {
				args[i] = strings.ReplaceAll(a, m.MountPath, dir)
			}
		}
	}
	return args
}

// podIPs are the addresses of the Deployment's Running pods.
func podIPs(t *testing.T, dep *appsv1.Deployment) []string {
	t.Helper()
	selector, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	pods := &corev1.PodList{}
	Expect(k8sClient.List(context.Background(), pods, client.InNamespace(dep.Namespace),
		client.MatchingLabelsSelector{Selector: selector})).To(Succeed())
	var ips []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
	}
	return ips
}

// runningPodOf returns a Running pod of the Deployment's current revision
// (KWOK runs none of its containers, but the pod carries what the kubelet
// would be given): a pod of an earlier template is on its way out, as a
// rollout replaces it.
func runningPodOf(t *testing.T, dep *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		hash, err := currentTemplateHash(dep)
		g.Expect(err).NotTo(HaveOccurred())
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(dep.Namespace),
			client.MatchingLabels{appsv1.DefaultDeploymentUniqueLabelKey: hash})).To(Succeed())
		for i := range pods.Items {
			if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pod = p
			}
		}
		g.Expect(pod).NotTo(BeNil(), "a Running pod of Deployment %s's revision %s", dep.Name, hash)
	}, timeout, interval).Should(Succeed())
	return pod
}

// currentTemplateHash is the pod-template-hash of the ReplicaSet of the
// Deployment's current revision.
func currentTemplateHash(dep *appsv1.Deployment) (string, error) {
	ctx := context.Background()
	current := &appsv1.Deployment{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(dep), current); err != nil {
		return "", err
	}
	revision := current.Annotations["deployment.kubernetes.io/revision"]
	sets := &appsv1.ReplicaSetList{}
	if err := k8sClient.List(ctx, sets, client.InNamespace(dep.Namespace)); err != nil {
		return "", err
	}
	for _, rs := range sets.Items {
		if metav1.IsControlledBy(&rs, current) && revision != "" && rs.Annotations["deployment.kubernetes.io/revision"] == revision {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], nil
		}
	}
	return "", fmt.Errorf("no ReplicaSet of Deployment %s at revision %q yet", dep.Name, revision)
}

// containerEnv resolves the container's environment as the kubelet would,
// for the variables it sets by value or from the pod's fields.
func containerEnv(t *testing.T, pod *corev1.Pod, c corev1.Container) map[string]string {
	t.Helper()
	// emptyDir mounts become temporary directories.
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				mounts[m.MountPath] = t.TempDir()
			}
		}
	}
	Expect(c.EnvFrom).To(BeEmpty(), "the operator's container takes no envFrom")
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
			for path, dir := range mounts {
				if e.Value == path || strings.HasPrefix(e.Value, path+"/") {
					env[e.Name] = dir + strings.TrimPrefix(e.Value, path)
				}
			}
		case e.ValueFrom.FieldRef != nil:
			v, ok := podField(pod, e.ValueFrom.FieldRef.FieldPath)
			Expect(ok).To(BeTrue(), "env %s: unsupported fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			env[e.Name] = v
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = containerResource(t, pod, c, e.ValueFrom.ResourceFieldRef)
		default:
			t.Fatalf("env %s: only values, fieldRefs and resourceFieldRefs are resolved here", e.Name)
		}
	}
	return env
}

// containerResource resolves a resourceFieldRef as the kubelet does for a
// limit or request the container sets: the quantity in units of the
// divisor (1 when unset), rounded up.
func containerResource(t *testing.T, pod *corev1.Pod, c corev1.Container, ref *corev1.ResourceFieldSelector) string {
	t.Helper()
	if ref.ContainerName != "" {
		for _, other := range pod.Spec.Containers {
			if other.Name == ref.ContainerName {
				c = other
			}
		}
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := map[string]corev1.ResourceList{"limits": c.Resources.Limits, "requests": c.Resources.Requests}[kind]
	q, ok := list[corev1.ResourceName(name)]
	Expect(ok).To(BeTrue(), "resourceFieldRef %s: the container sets none", ref.Resource)
	divisor := ref.Divisor.Value()
	if divisor == 0 {
		divisor = 1
	}
	return strconv.FormatInt((q.Value()+divisor-1)/divisor, 10)
}

var keyedField = regexp.MustCompile(`^metadata\.(annotations|labels)\['(.+)'\]$`)

// podField returns the value of a downward API field path of the pod, and
// whether the path is one it knows.
func podField(pod *corev1.Pod, path string) (string, bool) {
	if m := keyedField.FindStringSubmatch(path); m != nil {
		if m[1] == "annotations" {
			return pod.Annotations[m[2]], true
		}
		return pod.Labels[m[2]], true
	}
	fields := map[string]string{
		"metadata.name":           pod.Name,
		"metadata.namespace":      pod.Namespace,
		"metadata.uid":            string(pod.UID),
		"spec.serviceAccountName": pod.Spec.ServiceAccountName,
		"spec.nodeName":           pod.Spec.NodeName,
		"status.podIP":            pod.Status.PodIP,
	}
	v, ok := fields[path]
	return v, ok
}

// writeTokenKubeconfig writes a kubeconfig for the cluster that
// authenticates with a bearer token only.
func writeTokenKubeconfig(path, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["simcluster"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "simcluster", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	return clientcmd.WriteToFile(*kc, path)
}

// waitJob waits for the operator to create the Job and returns it.
func waitJob(op *operatorProcess, ns, name string) *batchv1.Job {
	job := &batchv1.Job{}
	Eventually(func() error {
		op.expectHealthy()
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, job)
	}, timeout, interval).Should(Succeed(), "Job %s/%s", ns, name)
	return job
}

// runMoverForJob runs the data mover as the Job's container would (the
// manager binary with the Job's arguments, its mounts mapped to local
// paths) against the S3 server, and reports its result as the termination
// message of the Job's pod, which KWOK has completed, as the kubelet would.
func runMoverForJob(t *testing.T, job *batchv1.Job, dataDir string, s3 *s3server.Server) {
	t.Helper()
	ctx := context.Background()
	work := t.TempDir()
	configFile := filepath.Join(work, "config.json")
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "config" && v.ConfigMap != nil {
			cm := &corev1.ConfigMap{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: v.ConfigMap.Name}, cm)).To(Succeed())
			Expect(os.WriteFile(configFile, []byte(cm.Data["config.json"]), 0o600)).To(Succeed())
		}
	}
	termination := filepath.Join(work, "termination-log")
	var args []string
	for _, a := range job.Spec.Template.Spec.Containers[0].Args {
		a = strings.Replace(a, "--data-dir=/data", "--data-dir="+dataDir, 1)
		a = strings.Replace(a, "--config-file=/config/config.json", "--config-file="+configFile, 1)
		args = append(args, a)
	}
	args = append(args, "--termination-log="+termination)
	cmd := exec.Command(manager, args...)
	cmd.Env = append(os.Environ(), s3.Env()...)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "the data mover of Job %s failed: %s", job.Name, out)
	result, err := os.ReadFile(termination)
	Expect(err).NotTo(HaveOccurred())

	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8sClient.List(ctx, pods, client.InNamespace(job.Namespace),
			client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{batchv1.ControllerUidLabel: string(job.UID)})})).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty())
		pod := pods.Items[0]
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: string(result), FinishedAt: metav1.Now()}},
		}}
		g.Expect(k8sClient.Status().Update(ctx, &pod)).To(Succeed())
	}, timeout, interval).Should(Succeed(), "reporting the result of Job %s", job.Name)
}

// writeJournal runs a real echo server on dataDir and has it journal n
// requests: the data the backup carries.
func writeJournal(t *testing.T, dataDir string, n int) {
	t.Helper()
	srv, err := echoserver.New(echoserver.Config{Message: "olm", Instance: "journal-0", DataDir: dataDir})
	Expect(err).NotTo(HaveOccurred())
	web := httptest.NewServer(srv.Handler())
	for i := range n {
		resp, err := http.Post(fmt.Sprintf("%s/items/%d", web.URL, i), "text/plain", strings.NewReader(fmt.Sprintf("entry %d", i)))
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		_ = resp.Body.Close()
	}
	web.Close()
	Expect(srv.Close()).To(Succeed())
}

// waitDeploymentOf waits for the Deployment OLM creates for the CSV named
// csv in namespace, with env (the Subscription's config.env) set on its
// pods, and for a Running pod of it. OLM finds a Subscription's config by
// the CSV it installed, which it may learn only after it created the
// Deployment: it then updates the Deployment, and the rollout replaces the
// first pod, which never had the config.
func waitDeploymentOf(t *testing.T, namespace, csv string, env map[string]string) *appsv1.Deployment {
	t.Helper()
	var dep *appsv1.Deployment
	Eventually(func(g Gomega) {
		deps := &appsv1.DeploymentList{}
		g.Expect(k8sClient.List(context.Background(), deps, client.InNamespace(namespace), client.MatchingLabels{ownerLabel: csv})).To(Succeed())
		g.Expect(deps.Items).To(HaveLen(1), "the Deployment of CSV %s", csv)
		dep = &deps.Items[0]
		for name, value := range env {
			g.Expect(dep.Spec.Template.Spec.Containers).To(ContainElement(HaveField("Env", ContainElement(corev1.EnvVar{Name: name, Value: value}))),
				"OLM sets the Subscription's config.env on Deployment %s", dep.Name)
		}
	}, timeout, interval).Should(Succeed())
	runningPodOf(t, dep)
	return dep
}

// expectLiveAPIAvailable checks that kube-apiserver reports the live API's
// APIService Available and serves its resources in namespace, which op
// serves.
func expectLiveAPIAvailable(t *testing.T, op *operatorProcess, namespace string) {
	t.Helper()
	ctx := context.Background()
	apiService := newObject("apiregistration.k8s.io/v1", "APIService", "", "v1alpha1.live.echo.dev")
	Eventually(func(g Gomega) {
		op.expectHealthy()
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(apiService), apiService)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))), "conditions: %v", conds)
	}, timeout, interval).Should(Succeed())
	// The aggregator may answer 503 for a moment after Available, until
	// its proxy has the Service's endpoint.
	Eventually(func(g Gomega) {
		raw, err := clientset.CoreV1().RESTClient().Get().AbsPath("/apis/live.echo.dev/v1alpha1/namespaces/" + namespace + "/echorevisions").DoRaw(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(raw)).To(ContainSubstring(`"kind":"EchoRevisionList"`))
	}, timeout, interval).Should(Succeed())
}
