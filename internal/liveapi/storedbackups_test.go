package liveapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
)

// testLimits are the listing limits of these tests: the defaults, with a
// storage that does not answer given up on within 3 seconds, and listings
// cut at 4,000 objects.
func testLimits() listingLimits {
	l := defaultListingLimits
	l.timeout, l.wait, l.objects = 3*time.Second, 20*time.Second, 4000
	return l
}

// storedBackupsOf serves StoredBackups of the locations (and Secrets)
// given, to a user allowed everything, with an egress policy that allows
// 127.0.0.1.
func storedBackupsOf(t testing.TB, limits listingLimits, objects ...client.Object) *storedBackups {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := echov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	// The fake storage listens on loopback, which only an administrator
	// allows.
	return &storedBackups{cache: c, listings: newLocationListings(c, allowLoopback(), storagesecrets.ClusterEndpoints{}, limits), readOnlyResource: readOnlyResource{
		resource: storedBackupsResource,
		access:   accessCheck{authz: authorizerfactory.NewAlwaysAllowAuthorizer(), resource: "echobackups"},
	}}
}

// fakeLocation is an EchoBackupLocation of bucket on srv, under the prefix
// "p", with its credentials Secret (creds-<name>).
func fakeLocation(srv *fakes3.Server, namespace, name, bucket string) []client.Object {
	return []client.Object{
		&echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "-" + name)},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
				Endpoint: srv.Endpoint, Bucket: bucket, Prefix: "p", ForcePathStyle: true,
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds-" + name, AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"},
			}},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "creds-" + name, Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
			Data:       map[string][]byte{"id": []byte("id"), "secret": []byte("secret")},
		},
	}
}

// backupObjects are the objects of whole backups under the prefix "p/",
// with manifests written as the data mover writes them.
func backupObjects(t *testing.T, keys ...string) map[string][]byte {
	t.Helper()
	objects := map[string][]byte{}
	for _, key := range keys {
		archive := []byte("the archive of " + key)
		sum := sha256.Sum256(archive)
		files := 1
		m := &backupstore.Manifest{
			FormatVersion: backupstore.FormatVersion, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Source:      backupstore.Source{Namespace: strings.Split(key, "/")[0], Name: strings.Split(key, "/")[1]},
			Compression: backupstore.CompressionGzip, DataFileCount: &files, Config: json.RawMessage(`{}`),
			Archive: backupstore.Archive{Name: "data.tar.gz", Size: int64(len(archive)), SHA256: hex.EncodeToString(sum[:])},
			Files: []backupstore.File{
				{Path: backupstore.ConfigName, Size: 2, Mode: 0o644, SHA256: hex.EncodeToString(sum[:])},
				{Path: "data/journal", Size: 1, Mode: 0o640, SHA256: hex.EncodeToString(sum[:])},
			},
		}
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		objects["p/"+backupstore.ManifestKey(key)] = b
		objects["p/"+backupstore.ArchiveKey(key, backupstore.CompressionGzip)] = archive
	}
	return objects
}

// warnings records the warnings of a request.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.list, "\n")
}

// request is the context of a request for namespace ("" for all), and
// the warnings it gets.
func request(namespace string) (context.Context, *warnings) {
	w := &warnings{}
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "admin"})
	return warning.WithWarningRecorder(ctx, w), w
}

func listStored(t *testing.T, s *storedBackups, ctx context.Context, opts *metainternalversion.ListOptions) *livev1alpha1.StoredBackupList {
	t.Helper()
	out, err := s.List(ctx, opts)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return out.(*livev1alpha1.StoredBackupList)
}

func names(list *livev1alpha1.StoredBackupList) []string {
	var out []string
	for _, b := range list.Items {
		out = append(out, b.Namespace+"/"+b.Name)
	}
	return out
}

// TestStoredBackupsAcrossLocations: a list of several locations shows the
// backups of those it could read, and a warning for each of the others
// (one that does not answer, two whose page never ends, one whose
// listing is too long); a list or get of one location that cannot be read
// fails with 503.
func TestStoredBackupsAcrossLocations(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("good", fakes3.Objects(backupObjects(t, "team-a/web/nightly.1", "team-a/web/nightly.2")))
	srv.Add("slow", fakes3.Slow())
	srv.Add("huge-page", fakes3.HugePage(1<<30))
	srv.Add("bloated-page", fakes3.BloatedPage(1<<30))
	srv.Add("endless", fakes3.EndlessPages(1000))
	var objects []client.Object
	objects = append(objects, fakeLocation(srv, "team-a", "offsite", "good")...)
	for _, bad := range []string{"slow", "huge-page", "bloated-page", "endless"} {
		objects = append(objects, fakeLocation(srv, "tenant", bad, bad)...)
	}
	s := storedBackupsOf(t, testLimits(), objects...)

	ctx, warned := request("")
	list := listStored(t, s, ctx, nil)
	got := map[string]int{}
	for _, b := range list.Items {
		got[b.Namespace+"/"+b.Location]++
		if b.Location == "offsite" && !b.Verified {
			t.Errorf("%s: not verified: %s", b.Name, b.Message)
		}
	}
	if got["team-a/offsite"] != 2 || got["tenant/endless"] != 2000 || len(got) != 2 {
		t.Errorf("listed by location %v; want the 2 of team-a/offsite and the 2,000 of the 4,000 objects tenant/endless lists first", got)
	}
	for _, want := range []string{
		"EchoBackupLocation tenant/slow: " + outcomeUnreachable,
		"EchoBackupLocation tenant/huge-page: ",
		"a page of more than 1000 objects",
		"EchoBackupLocation tenant/bloated-page: ",
		"more than 4194304 bytes",
		"EchoBackupLocation tenant/endless: its storage holds more than a listing reads (4000 objects, 100 pages)",
	} {
		if !strings.Contains(warned.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, warned)
		}
	}
	if strings.Contains(warned.String(), "offsite") {
		t.Errorf("a warning for the location that was read:\n%s", warned)
	}
	// Within listingTTL, a failed storage is not read again: its failure
	// is remembered too.
	ctx, warned = request("")
	listStored(t, s, ctx, nil)
	if !strings.Contains(warned.String(), "tenant/slow: "+outcomeUnreachable) || srv.Stats("slow").ListRequests.Load() != 1 {
		t.Errorf("a second list read the storage that did not answer %d times in all; warnings:\n%s", srv.Stats("slow").ListRequests.Load(), warned)
	}

	// One location: its failure is the request's.
	one := &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{livev1alpha1.LocationLabel: "slow"})}
	ctx, _ = request("tenant")
	if _, err := s.List(ctx, one); !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "tenant/slow") {
		t.Errorf("a list of the location that does not answer: %v; want 503 naming it", err)
	}
	if _, err := s.Get(ctx, "slow.team.web.b-0000001", nil); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("a get from the location that does not answer: %v; want 503", err)
	}
	ctx, _ = request("team-a")
	if got, err := s.Get(ctx, "offsite.team-a.web.nightly.2", nil); err != nil || got.(*livev1alpha1.StoredBackup).Key != "team-a/web/nightly.2" {
		t.Errorf("a get from the location that answers: %v, %v", got, err)
	}
	ctx, warned = request("tenant")
	if _, err := s.Get(ctx, "endless.team.web.b-0009999", nil); !apierrors.IsNotFound(err) || !strings.Contains(warned.String(), "more than a listing reads") {
		t.Errorf("a get of a backup past the cut: %v, warnings %q; want NotFound, with a warning", err, warned)
	}
}

// TestStoredBackupsFailuresOfTheLocationAreNotRemembered: a location that
// fails before its storage is asked anything (here, its Secret is
// missing) lists as soon as it is fixed; one whose storage failed is not
// read again for listingTTL.
func TestStoredBackupsFailuresOfTheLocationAreNotRemembered(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("good", fakes3.Objects(backupObjects(t, "team-a/web/nightly.1")))
	objects := fakeLocation(srv, "team-a", "offsite", "good")
	secret := objects[1].(*corev1.Secret)
	s := storedBackupsOf(t, testLimits(), objects[0])
	ctx, warned := request("team-a")
	if list := listStored(t, s, ctx, nil); len(list.Items) != 0 || !strings.Contains(warned.String(), "reading the credentials Secret creds-offsite") {
		t.Fatalf("listed %v, warnings %q; want none, and a warning of the missing Secret", names(list), warned)
	}
	if err := s.cache.(client.Client).Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	ctx, warned = request("team-a")
	if list := listStored(t, s, ctx, nil); len(list.Items) != 1 || warned.String() != "" {
		t.Errorf("once the Secret exists, listed %v, warnings %q", names(list), warned)
	}
}

// TestStoredBackupsOfHugeManifests: backups whose manifests are too large
// for a listing are listed, not verified, with the reason.
func TestStoredBackupsOfHugeManifests(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("huge", fakes3.HugeManifests(2, 64<<20))
	s := storedBackupsOf(t, testLimits(), fakeLocation(srv, "tenant", "huge", "huge")...)
	ctx, _ := request("tenant")
	list := listStored(t, s, ctx, nil)
	if len(list.Items) != 2 {
		t.Fatalf("listed %v", names(list))
	}
	for _, b := range list.Items {
		if b.Verified || !strings.Contains(b.Message, "a restore reads it whole") {
			t.Errorf("%s: verified %v, message %q", b.Name, b.Verified, b.Message)
		}
	}
}

// TestStoredBackupsLocationsShareNoManifests: two namespaces' locations of
// the same bucket and keys each read the manifests: what one read is
// never shown for the other.
func TestStoredBackupsLocationsShareNoManifests(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("shared", fakes3.Objects(backupObjects(t, "team-a/web/nightly.1", "team-a/web/nightly.2")))
	objects := append(fakeLocation(srv, "team-a", "offsite", "shared"), fakeLocation(srv, "team-b", "offsite", "shared")...)
	s := storedBackupsOf(t, testLimits(), objects...)
	for _, ns := range []string{"team-a", "team-b", "team-a"} {
		ctx, _ := request(ns)
		if list := listStored(t, s, ctx, nil); len(list.Items) != 2 {
			t.Fatalf("%s listed %v", ns, names(list))
		}
	}
	// Each manifest read is two requests (minio-go's first read of an
	// object asks for it again); the third listing is served from memory.
	if gets := srv.Stats("shared").GetRequests.Load(); gets != 2*2*2 {
		t.Errorf("the listings sent %d requests for objects; want two for each of each namespace's two manifests", gets)
	}
}

// TestStoredBackupsPages: a list asked for in pages gives each backup
// once, in order, whatever order the locations answered in.
func TestStoredBackupsPages(t *testing.T) {
	srv := fakes3.Start(t)
	var keys []string
	for _, n := range []string{"1", "2", "3", "4", "5"} {
		keys = append(keys, "team-a/web/nightly."+n)
	}
	srv.Add("bucket-one", fakes3.Objects(backupObjects(t, keys[:3]...)))
	srv.Add("bucket-two", fakes3.Objects(backupObjects(t, keys[3:]...)))
	objects := append(fakeLocation(srv, "team-a", "one", "bucket-one"), fakeLocation(srv, "team-a", "two", "bucket-two")...)
	s := storedBackupsOf(t, testLimits(), objects...)
	var all []string
	opts := &metainternalversion.ListOptions{Limit: 2}
	for range 4 {
		ctx, _ := request("team-a")
		page := listStored(t, s, ctx, opts)
		all = append(all, names(page)...)
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	want := "team-a/one.team-a.web.nightly.1,team-a/one.team-a.web.nightly.2,team-a/one.team-a.web.nightly.3,team-a/two.team-a.web.nightly.4,team-a/two.team-a.web.nightly.5"
	if strings.Join(all, ",") != want {
		t.Errorf("pages gave %v", all)
	}
}
