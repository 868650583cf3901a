package controllers

import (
	"compress/gzip"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

func TestRestoreJobs(t *testing.T) {
	s3 := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "b",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"}}}
	pvc := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups", SubPath: "echo"}}
	rs := func(policy echov1alpha1.ExistingDataPolicy) *echov1alpha1.EchoRestore {
		return &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1", UID: "uid-r1"},
			Spec: echov1alpha1.EchoRestoreSpec{ExistingData: policy}}
	}
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: echov1alpha1.EchoSpec{NodeSelector: map[string]echov1alpha1.LabelValue{"disk": "ssd"}, Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}}}

	cases := []struct {
		name        string
		build       func() (args []string, pod corev1.PodSpec, jobName string)
		wantArgs    []string
		wantClaims  []string // claims mounted, with "ro" or "rw"
		wantNodeSel bool
	}{
		{
			name: "inspect from S3 mounts nothing of the Echo",
			build: func() ([]string, corev1.PodSpec, string) {
				j := inspectJob(rs(""), restoreSource{storage: s3, key: "a/web/w1", echoName: "web"}, moverSettings{image: "img"})
				return j.Spec.Template.Spec.Containers[0].Args, j.Spec.Template.Spec, j.Name
			},
			wantArgs: []string{"inspect", "--key=a/web/w1", "--s3-endpoint=https://s3.example.test", "--s3-bucket=b"},
		},
		{
			name: "inspect from a claim mounts the backup claim",
			build: func() ([]string, corev1.PodSpec, string) {
				j := inspectJob(rs(""), restoreSource{storage: pvc, key: "a/web/w1", echoName: "web"}, moverSettings{image: "img"})
				return j.Spec.Template.Spec.Containers[0].Args, j.Spec.Template.Spec, j.Name
			},
			wantArgs:   []string{"inspect", "--key=a/web/w1", "--fs-root=/backup/echo"},
			wantClaims: []string{"backups:rw"},
		},
		{
			name: "restore defaults to failing on existing data and writes the Echo's claim",
			build: func() ([]string, corev1.PodSpec, string) {
				j := restoreJob(rs(""), restoreSource{storage: s3, key: "a/web/w1"}, echo, moverSettings{image: "img"})
				return j.Spec.Template.Spec.Containers[0].Args, j.Spec.Template.Spec, j.Name
			},
			wantArgs:    []string{"restore", "--data-dir=/data", "--key=a/web/w1", "--existing-data=Fail", "--restore-id=uid-r1"},
			wantClaims:  []string{"web-data:rw"},
			wantNodeSel: true,
		},
		{
			name: "restore that replaces",
			build: func() ([]string, corev1.PodSpec, string) {
				j := restoreJob(rs(echov1alpha1.ExistingDataReplace), restoreSource{storage: pvc, key: "k"}, echo, moverSettings{image: "img"})
				return j.Spec.Template.Spec.Containers[0].Args, j.Spec.Template.Spec, j.Name
			},
			wantArgs:    []string{"restore", "--existing-data=Replace", "--restore-id=uid-r1", "--fs-root=/backup/echo"},
			wantClaims:  []string{"backups:rw", "web-data:rw"},
			wantNodeSel: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, pod, name := tc.build()
			if !strings.HasPrefix(name, "r1-") {
				t.Errorf("Job name %q does not derive from the restore", name)
			}
			for _, a := range tc.wantArgs {
				if !slices.Contains(args, a) {
					t.Errorf("args %v lack %q", args, a)
				}
			}
			for _, a := range args {
				if strings.Contains(strings.ToLower(a), "secret") || strings.Contains(a, "creds") {
					t.Errorf("argument %q carries credentials", a)
				}
			}
			var claims []string
			for _, v := range pod.Volumes {
				if c := v.PersistentVolumeClaim; c != nil {
					mode := "rw"
					if c.ReadOnly {
						mode = "ro"
					}
					claims = append(claims, c.ClaimName+":"+mode)
				}
			}
			if !slices.Equal(claims, tc.wantClaims) {
				t.Errorf("claims = %v, want %v", claims, tc.wantClaims)
			}
			if got := pod.NodeSelector["disk"] == "ssd"; got != tc.wantNodeSel {
				t.Errorf("node selector passed on = %v, want %v", got, tc.wantNodeSel)
			}
			if !*pod.SecurityContext.RunAsNonRoot || !*pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem ||
				pod.Containers[0].Resources.Limits.Memory().IsZero() || *pod.AutomountServiceAccountToken {
				t.Error("the pod is not restricted and bounded")
			}
		})
	}
}

func TestDecodeBackedUpEcho(t *testing.T) {
	doc := `{"apiVersion":"echo.dev/v1alpha1","kind":"Echo","metadata":{"labels":{"a":"b"}},"spec":{"message":"hi"}}`
	var zipped strings.Builder
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write([]byte(doc))
	_ = zw.Close()

	cases := []struct {
		name    string
		res     moverprotocol.Inspection
		wantErr string
	}{
		{"plain", moverprotocol.Inspection{Echo: []byte(doc)}, ""},
		{"gzipped", moverprotocol.Inspection{EchoGzip: base64.StdEncoding.EncodeToString([]byte(zipped.String()))}, ""},
		{"no configuration", moverprotocol.Inspection{}, "holds no Echo configuration"},
		{"no spec", moverprotocol.Inspection{Echo: []byte(`{"metadata":{}}`)}, "has no spec"},
		{"not base64", moverprotocol.Inspection{EchoGzip: "%%%"}, "echoGzip"},
		{"not gzip", moverprotocol.Inspection{EchoGzip: base64.StdEncoding.EncodeToString([]byte("plain"))}, "echoGzip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeBackedUpEcho(&tc.res)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Message != "hi" || got.Metadata.Labels["a"] != "b" {
				t.Errorf("decoded %+v", got)
			}
		})
	}
}

// TestRestoreSourceKeepsItsLocation: a stored backup's source names its
// location before its storage is resolved (it is the location's, inline);
// resolving keeps that location, whose mover settings the restore's Jobs
// take, and a storage that names a location brings that one.
func TestRestoreSourceKeepsItsLocation(t *testing.T) {
	stored := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Name: "stored"}}
	named := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Name: "named"}}
	inline := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Bucket: "b"}}

	src := restoreSource{location: stored}
	src.resolved(inline, nil)
	if src.location != stored || src.storage.S3 == nil {
		t.Errorf("a stored backup's source resolved to %+v, want its location kept", src)
	}
	src = restoreSource{}
	src.resolved(inline, named)
	if src.location != named {
		t.Errorf("a source whose storage names a location resolved to %+v, want that location", src)
	}
}
