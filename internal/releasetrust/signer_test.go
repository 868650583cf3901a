package releasetrust

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/internal/chart"
)

func newTestSigner(t *testing.T, key string) *Signer {
	t.Helper()
	s, err := NewSigner([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const testKey = "0123456789abcdef0123456789abcdef"

func record(name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "sh.helm.release.v1." + name + ".v1",
			Labels: map[string]string{
				chart.ReleaseOwnerLabel: chart.ReleaseOwner, chart.ReleaseNameLabel: name,
				chart.ReleaseStatusLabel: "deployed", chart.ReleaseVersionLabel: "1", "createdAt": "1",
			},
		},
		Type: chart.ReleaseSecretType,
		Data: map[string][]byte{ReleaseDataKey: []byte("H4sI-encoded-release")},
	}
}

// ownedRecord is a record controlled by the Echo of uid.
func ownedRecord(name string, uid types.UID) *corev1.Secret {
	r := record(name)
	r.OwnerReferences = []metav1.OwnerReference{{APIVersion: "echo.dev/v1alpha1", Kind: "Echo", Name: name, UID: uid, Controller: ptr.To(true)}}
	return r
}

func TestSignerVerify(t *testing.T) {
	s := newTestSigner(t, testKey)
	tests := []struct {
		name   string
		change func(*corev1.Secret)
		want   bool
	}{
		{"as signed", func(*corev1.Secret) {}, true},
		{"a timestamp label restamped", func(r *corev1.Secret) { r.Labels["modifiedAt"] = "2" }, true},
		{"an owner reference added", func(r *corev1.Secret) {
			r.OwnerReferences = append(r.OwnerReferences, metav1.OwnerReference{UID: "x"})
		}, true},
		{"its controller replaced by a new Echo of the same name", func(r *corev1.Secret) { r.OwnerReferences[0].UID = "uid-2" }, false},
		{"its controller removed", func(r *corev1.Secret) { r.OwnerReferences = nil }, false},
		{"the release changed", func(r *corev1.Secret) { r.Data[ReleaseDataKey] = []byte("H4sI-other") }, false},
		{"the release removed", func(r *corev1.Secret) { delete(r.Data, ReleaseDataKey) }, false},
		{"the status label changed", func(r *corev1.Secret) { r.Labels[chart.ReleaseStatusLabel] = "superseded" }, false},
		{"the version label raised", func(r *corev1.Secret) { r.Labels[chart.ReleaseVersionLabel] = "9" }, false},
		{"relabelled to another release", func(r *corev1.Secret) { r.Labels[chart.ReleaseNameLabel] = "other" }, false},
		{"a label added", func(r *corev1.Secret) { r.Labels["extra"] = "x" }, false},
		{"moved to another namespace", func(r *corev1.Secret) { r.Namespace = "team-b" }, false},
		{"renamed", func(r *corev1.Secret) { r.Name = "sh.helm.release.v1.web.v2" }, false},
		{"another type", func(r *corev1.Secret) { r.Type = corev1.SecretTypeOpaque }, false},
		{"the signature garbled", func(r *corev1.Secret) { r.Annotations[SignatureAnnotation] = "v1:!!" }, false},
		{"the signature of another scheme", func(r *corev1.Secret) {
			r.Annotations[SignatureAnnotation] = "v0" + r.Annotations[SignatureAnnotation][2:]
		}, false},
		{"the signature removed", func(r *corev1.Secret) { delete(r.Annotations, SignatureAnnotation) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ownedRecord("web", "uid-1")
			s.Sign(r)
			tt.change(r)
			if got := s.Verify(r); got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("another key", func(t *testing.T) {
		r := record("web")
		newTestSigner(t, "fedcba9876543210fedcba9876543210").Sign(r)
		if s.Verify(r) {
			t.Error("a record signed with another key verified")
		}
	})
	t.Run("a short key is refused", func(t *testing.T) {
		if _, err := NewSigner([]byte("short")); err == nil {
			t.Error("a 5-byte key was accepted")
		}
	})
}

// TestLegacySignatures: a record signed before the owner was covered
// verifies only if it was created before the operator first signed the
// owner; a copy created later, under another owner, does not.
func TestLegacySignatures(t *testing.T) {
	cutoff := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, err := newSigner([]byte(testKey), cutoff)
	if err != nil {
		t.Fatal(err)
	}
	legacy := func(created time.Time, owner types.UID) *corev1.Secret {
		r := ownedRecord("web", owner)
		r.CreationTimestamp = metav1.NewTime(created)
		r.Annotations = map[string]string{SignatureAnnotation: legacySchemeVersion + ":" + base64.StdEncoding.EncodeToString(s.mac(r, legacySchemeVersion))}
		return r
	}
	if !s.Verify(legacy(cutoff.Add(-time.Hour), "uid-1")) {
		t.Error("a legacy record written before the cut-off does not verify")
	}
	if s.Verify(legacy(cutoff.Add(time.Hour), "uid-2")) {
		t.Error("a legacy record created after the cut-off verifies")
	}
	if fresh := newTestSigner(t, testKey); fresh.Verify(legacy(cutoff.Add(-time.Hour), "uid-1")) {
		t.Error("a signer without a cut-off trusts legacy records")
	}
}

func TestSecretClient(t *testing.T) {
	ctx := context.Background()
	s := newTestSigner(t, testKey)
	forged := record("web")
	forged.Name = "forged"
	clientset := fake.NewClientset(forged)
	c := s.SecretClient(clientset.CoreV1().Secrets("team-a"), "team-a")

	// Helm leaves the namespace to the namespaced client.
	unplaced := record("web")
	unplaced.Namespace = ""
	written, err := c.Create(ctx, unplaced, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if written.Namespace != "team-a" {
		t.Fatalf("written in namespace %q", written.Namespace)
	}
	if !s.Verify(written) {
		t.Fatal("a record written through the client does not verify")
	}
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != written.Name {
		t.Errorf("List returned %d records, want only the signed one", len(list.Items))
	}
	if _, err := c.Get(ctx, "forged", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get of an unsigned record: %v, want NotFound", err)
	}

	t.Run("an unsigned record in the way of a create is reported", func(t *testing.T) {
		inTheWay := record("api")
		if _, err := clientset.CoreV1().Secrets("team-a").Create(ctx, inTheWay, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Create(ctx, record("api"), metav1.CreateOptions{})
		var untrusted *UntrustedRecordError
		if !errors.As(err, &untrusted) || untrusted.Name != inTheWay.Name {
			t.Errorf("Create over an unsigned record: %v, want an UntrustedRecordError naming it", err)
		}
	})
	t.Run("a signed record in the way is AlreadyExists, as Helm expects", func(t *testing.T) {
		if _, err := c.Create(ctx, record("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("Create over a signed record: %v, want AlreadyExists", err)
		}
	})
}

// pagingSecrets answers lists a page of opts.Limit Secrets at a time, as
// the API server does, and records the largest page asked for.
type pagingSecrets struct {
	corev1client.SecretInterface
	all     []corev1.Secret
	maxPage int64
}

func (p *pagingSecrets) List(_ context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	p.maxPage = max(p.maxPage, opts.Limit)
	start, _ := strconv.Atoi(opts.Continue)
	end := len(p.all)
	if opts.Limit > 0 {
		end = min(end, start+int(opts.Limit))
	}
	out := &corev1.SecretList{Items: append([]corev1.Secret(nil), p.all[start:end]...)}
	if end < len(p.all) {
		out.Continue = strconv.Itoa(end)
	}
	return out, nil
}

// TestSecretClientListsByPages: a namespace full of forged records is read
// a page at a time, and only the signed records come back.
func TestSecretClientListsByPages(t *testing.T) {
	s := newTestSigner(t, testKey)
	secrets := &pagingSecrets{}
	for i := range 100 {
		r := record("web")
		r.Name = fmt.Sprintf("forged-%d", i)
		if i%25 == 0 {
			s.Sign(r)
		}
		secrets.all = append(secrets.all, *r)
	}
	list, err := s.SecretClient(secrets, "team-a").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 4 {
		t.Errorf("List returned %d records, want the 4 signed ones", len(list.Items))
	}
	if secrets.maxPage != listPageSize || list.Continue != "" {
		t.Errorf("pages of %d, continue %q; want pages of %d read to the end", secrets.maxPage, list.Continue, listPageSize)
	}
}
