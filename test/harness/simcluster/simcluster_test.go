package simcluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// restrictedPodSpec is a pod spec that passes the "restricted" Pod Security
// Standard.
func restrictedPodSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "example.invalid/echo:never-pulled",
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

// testBinaries returns the control-plane binaries, or skips the test in
// -short mode or when they are missing (fails it under CI).
func testBinaries(t *testing.T) Binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a simulated cluster: not run in -short mode")
	}
	bins, err := LocateBinaries("")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("control-plane binaries missing (run `make control-plane`): %v", err)
		}
		t.Fatalf("control-plane binaries missing in CI: %v", err)
	}
	return bins
}

func TestCluster(t *testing.T) {
	bins := testBinaries(t)
	g := NewWithT(t)
	ctx := t.Context()

	workDir := t.TempDir()
	dumpLogs := func() {
		for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
			t.Logf("--- %s.log (tail)\n%s", name, logTail(filepath.Join(workDir, name+".log"), 30))
		}
	}

	begin := time.Now()
	c, err := Start(ctx, Options{
		Binaries:             bins,
		WorkDir:              workDir,
		Nodes:                2,
		DefaultStorageClass:  true,
		HeldJobPodNamespaces: []string{heldNamespace},
	})
	if err != nil {
		dumpLogs()
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Logf("cluster started in %s", time.Since(begin).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs()
		}
		if !stopped {
			_ = c.Stop()
		}
	})

	// The kubeconfig file works on its own.
	fileCfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	g.Expect(err).NotTo(HaveOccurred())
	fileClient, err := kubernetes.NewForConfig(fileCfg)
	g.Expect(err).NotTo(HaveOccurred())
	nodes, err := fileClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes.Items).To(HaveLen(2))

	cs, err := kubernetes.NewForConfig(c.Config())
	g.Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "simcluster-test",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	labels := map[string]string{"app": "echo"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       restrictedPodSpec(corev1.RestartPolicyAlways),
			},
		},
	}
	phase := time.Now()
	_, err = cs.AppsV1().Deployments(ns.Name).Create(ctx, dep, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		d, err := cs.AppsV1().Deployments(ns.Name).Get(ctx, dep.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(3)))
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(3)))
		g.Expect(d.Status.Conditions).To(ContainElement(And(
			HaveField("Type", appsv1.DeploymentAvailable),
			HaveField("Status", corev1.ConditionTrue),
		)))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("deployment available in %s", time.Since(phase).Round(time.Millisecond))

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns.Name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				Spec: restrictedPodSpec(corev1.RestartPolicyNever),
			},
		},
	}
	phase = time.Now()
	_, err = cs.BatchV1().Jobs(ns.Name).Create(ctx, job, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		j, err := cs.BatchV1().Jobs(ns.Name).Get(ctx, job.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(j.Status.Succeeded).To(Equal(int32(1)))
		g.Expect(j.Status.Conditions).To(ContainElement(And(
			HaveField("Type", batchv1.JobComplete),
			HaveField("Status", corev1.ConditionTrue),
		)))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("job complete in %s", time.Since(phase).Round(time.Millisecond))

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns.Name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
	phase = time.Now()
	_, err = cs.CoreV1().PersistentVolumeClaims(ns.Name).Create(ctx, pvc, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		p, err := cs.CoreV1().PersistentVolumeClaims(ns.Name).Get(ctx, pvc.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Spec.StorageClassName).To(HaveValue(Equal(StorageClassName)))
		g.Expect(p.Status.Phase).To(Equal(corev1.ClaimBound))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("claim bound in %s", time.Since(phase).Round(time.Millisecond))

	phase = time.Now()
	checkHeldJobPods(ctx, g, cs)
	t.Logf("held Job pods ended in %s", time.Since(phase).Round(time.Millisecond))

	pids := c.pids()
	g.Expect(pids).To(HaveLen(5))
	for name, pid := range pids {
		g.Expect(processAlive(pid)).To(BeTrue(), "%s (pid %d) should be running", name, pid)
	}
	phase = time.Now()
	stopped = true
	g.Expect(c.Stop()).To(Succeed())
	t.Logf("cluster stopped in %s", time.Since(phase).Round(time.Millisecond))
	for name, pid := range pids {
		g.Expect(processAlive(pid)).To(BeFalse(), "%s (pid %d) should be gone", name, pid)
	}
	_, err = os.Stat(filepath.Join(c.WorkDir(), "state"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "state directory should be removed")
	// Stop is idempotent.
	g.Expect(c.Stop()).To(Succeed())

}

// TestComponentRestart stops, kills and restarts every component of a
// running cluster: each comes back on the same port with the same data,
// the kubeconfig written at start keeps working, and the cluster still
// schedules and runs pods afterwards.
func TestComponentRestart(t *testing.T) {
	bins := testBinaries(t)
	g := NewWithT(t)
	ctx := t.Context()
	workDir := t.TempDir()
	c, err := Start(ctx, Options{Binaries: bins, WorkDir: workDir})
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, comp := range Components() {
				t.Logf("--- %s.log (tail)\n%s", comp, logTail(filepath.Join(workDir, string(comp)+".log"), 30))
			}
		}
		_ = c.Stop()
	})

	// A client from the kubeconfig file, made before any restart.
	fileCfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(fileCfg)
	g.Expect(err).NotTo(HaveOccurred())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restart"}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	kept := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns.Name},
		Data:       map[string]string{"key": "value"},
	}
	_, err = cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, kept, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	expectKept := func() {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, kept.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cm.Data).To(Equal(kept.Data))
	}
	// expectNewProcess checks that comp runs as a new process whose pid
	// file (read by the reaper) names it.
	expectNewProcess := func(comp Component, before map[string]int) {
		t.Helper()
		pid, ok := c.pids()[string(comp)]
		g.Expect(ok).To(BeTrue(), "%s has no pid", comp)
		g.Expect(pid).NotTo(Equal(before[string(comp)]), "%s should be a new process", comp)
		g.Expect(processAlive(pid)).To(BeTrue(), "%s (pid %d) should be running", comp, pid)
		filePid, ok := readPid(filepath.Join(c.pidDir, string(comp)+".pid"))
		g.Expect(ok).To(BeTrue(), "%s has no pid file", comp)
		g.Expect(filePid).To(Equal(pid))
	}

	// kube-apiserver, killed: clients fail while it is down, then work
	// again through the same kubeconfig.
	before := c.pids()
	phase := time.Now()
	g.Expect(c.KillComponent(ctx, ComponentAPIServer)).To(Succeed())
	g.Expect(processAlive(before[string(ComponentAPIServer)])).To(BeFalse())
	_, err = cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, kept.Name, metav1.GetOptions{})
	g.Expect(err).To(HaveOccurred(), "kube-apiserver should be down")
	g.Expect(c.StartComponent(ctx, ComponentAPIServer)).To(Succeed())
	t.Logf("kube-apiserver killed and started again in %s", time.Since(phase).Round(time.Millisecond))
	expectNewProcess(ComponentAPIServer, before)
	expectKept()

	// etcd, stopped gracefully: its data is kept and writes work again.
	phase = time.Now()
	g.Expect(c.RestartComponent(ctx, ComponentEtcd)).To(Succeed())
	t.Logf("etcd restarted in %s", time.Since(phase).Round(time.Millisecond))
	expectNewProcess(ComponentEtcd, before)
	expectKept()
	_, err = cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "after-etcd-restart", Namespace: ns.Name},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// etcd, killed, then kube-apiserver restarted on top: a fresh
	// kube-apiserver reads everything back from etcd's data directory.
	g.Expect(c.KillComponent(ctx, ComponentEtcd)).To(Succeed())
	g.Expect(c.StartComponent(ctx, ComponentEtcd)).To(Succeed())
	g.Expect(c.RestartComponent(ctx, ComponentAPIServer)).To(Succeed())
	expectKept()
	_, err = cs.CoreV1().ConfigMaps(ns.Name).Get(ctx, "after-etcd-restart", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// The other components, one killed and two stopped.
	g.Expect(c.KillComponent(ctx, ComponentKwok)).To(Succeed())
	g.Expect(c.StartComponent(ctx, ComponentKwok)).To(Succeed())
	for _, comp := range []Component{ComponentControllerManager, ComponentScheduler} {
		g.Expect(c.RestartComponent(ctx, comp)).To(Succeed())
	}
	for _, comp := range Components() {
		expectNewProcess(comp, before)
		g.Expect(c.StartComponent(ctx, comp)).To(MatchError(ContainSubstring("is running")))
	}
	g.Expect(c.StartComponent(ctx, "kubelet")).To(MatchError(ContainSubstring("unknown component")))

	// The restarted cluster still runs workloads: the Deployment, ReplicaSet
	// and scheduler controllers and KWOK all take part.
	labels := map[string]string{"app": "after-restart"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "after-restart", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       restrictedPodSpec(corev1.RestartPolicyAlways),
			},
		},
	}
	_, err = cs.AppsV1().Deployments(ns.Name).Create(ctx, dep, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		d, err := cs.AppsV1().Deployments(ns.Name).Get(ctx, dep.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	// Stop ends the restarted processes too.
	pids := c.pids()
	g.Expect(pids).To(HaveLen(5))
	g.Expect(c.Stop()).To(Succeed())
	for name, pid := range pids {
		g.Expect(processAlive(pid)).To(BeFalse(), "%s (pid %d) should be gone", name, pid)
	}
}
