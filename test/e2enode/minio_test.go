package e2enode

import (
	"context"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The in-cluster MinIO of the backup samples: Service minio in namespace
// minio, port 9000 (config/samples/echo_v1alpha1_echobackup.yaml).
const (
	minioNamespace = "minio"
	minioUser      = "echo-backup"
	minioPassword  = "e2enode-secret-key"
	backupBucket   = "echo-backups"
	// minioKMSKey is the key of MinIO's built-in KMS, for SSE-KMS backups;
	// minioKMSSecret its 32 bytes in base64 (a test's, not a secret).
	minioKMSKey    = "echo-e2enode-key"
	minioKMSSecret = "ZWNoby1lMmVub2RlLWttcy1rZXktMzItYnl0ZXMhISE="
)

// minioServer is a MinIO of its own namespace, behind the Service minio
// of that namespace, port 9000, with its root user and one bucket.
type minioServer struct {
	namespace, user, password, bucket string
}

// samplesMinIO is the MinIO the samples name.
var samplesMinIO = minioServer{namespace: minioNamespace, user: minioUser, password: minioPassword, bucket: backupBucket}

// runMinIO runs MinIO as a restricted pod behind the Service the samples
// name, and creates the bucket at the pod's address on the node's bridge.
// It returns a client of that bucket.
func runMinIO(t *testing.T) *minio.Client {
	t.Helper()
	return runMinIOServer(t, samplesMinIO)
}

// runMinIOServer runs the MinIO m as a restricted pod, a Deployment
// behind a Service, both named minio, and creates its bucket at the pod's
// address on the node's bridge. It returns a client of that address.
func runMinIOServer(t *testing.T, m minioServer) *minio.Client {
	t.Helper()
	ctx := context.Background()
	ns := restrictedNamespace(t, m.namespace)
	labels := map[string]string{"app": "minio"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "minio-root", Namespace: ns},
		StringData: map[string]string{"MINIO_ROOT_USER": m.user, "MINIO_ROOT_PASSWORD": m.password,
			"MINIO_KMS_SECRET_KEY": minioKMSKey + ":" + minioKMSSecret}}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "minio", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: minioPod(secret.Name)},
		},
	}
	svc := minioService(m)
	for _, obj := range []client.Object{secret, deploy, svc} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	return makeMinIOBucket(t, m)
}

// minioService is the Service of the MinIO m.
func minioService(m minioServer) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "minio", Namespace: m.namespace},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "minio"}, Ports: []corev1.ServicePort{{Name: "s3", Port: 9000, TargetPort: intstr.FromInt32(9000)}}},
	}
}

// makeMinIOBucket waits for the MinIO m's pod to be ready and creates its
// bucket, which an empty data directory lacks, at the pod's address on
// the node's bridge. It returns a client of that address.
func makeMinIOBucket(t *testing.T, m minioServer) *minio.Client {
	t.Helper()
	ctx := context.Background()
	ns := m.namespace
	kubectl(t, "rollout", "status", "-n", ns, "deployment/minio", "--timeout=180s")
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=minio", FieldSelector: "status.phase=Running"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("MinIO's pods: %v, %v", pods, err)
	}
	s3, err := minio.New(pods.Items[0].Status.PodIP+":9000", &minio.Options{Creds: credentials.NewStaticV4(m.user, m.password, "")})
	if err != nil {
		t.Fatal(err)
	}
	mkCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s3.MakeBucket(mkCtx, m.bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating the bucket: %v", err)
	}
	return s3
}

// minioPod runs MinIO as the restricted Pod Security Standard allows: a
// non-root user, a read-only root, its data and home on emptyDirs. Its
// root credentials and the key of its built-in KMS (for encrypted
// backups) come from secret.
func minioPod(secret string) corev1.PodSpec {
	return corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{
			Name: "minio", Image: minioImage,
			Args:    []string{"server", "/data", "--quiet", "--address", ":9000", "--certs-dir", "/tmp/certs"},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}},
			Env:     []corev1.EnvVar{{Name: "HOME", Value: "/tmp"}, {Name: "MINIO_BROWSER", Value: "off"}, {Name: "MINIO_UPDATE", Value: "off"}},
			Ports:   []corev1.ContainerPort{{ContainerPort: 9000}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/minio/health/ready", Port: intstr.FromInt32(9000)}}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "tmp", MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}
