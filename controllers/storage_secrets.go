package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// The storage Secrets a data mover Job may be given: only those that opted
// in with echov1alpha1.StorageSecretLabel. A Job's pod reads whatever
// Secret of its namespace its environment and volumes name, so without
// this a user who may create EchoBackups but not read Secrets could name
// any Secret (a database password) as the S3 credentials of an endpoint
// of their own, and read it from the request's signature. Labelling a
// Secret takes the right to edit it.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get

// optInRefusal refuses a data mover Job: something its storage names, a
// Secret or a ServiceAccount, did not opt in. Its reason is that of the
// failed backup or restore, and of the Warning Event.
type optInRefusal interface {
	error
	reason() string
	// message says what is wrong and how to fix it; then, when given,
	// what follows (the refused operation does not go on by itself);
	// otherwise, when given, what to do if what is named is not the
	// storage's.
	message(then, otherwise string) string
}

// asOptInRefusal finds the refusal in err.
func asOptInRefusal(err error) (optInRefusal, bool) {
	var refused optInRefusal
	return refused, errors.As(err, &refused)
}

// secretsNotOptedIn refuses a data mover Job: Secrets of namespace that its
// storage names exist without the label.
type secretsNotOptedIn struct {
	namespace string
	secrets   []string
}

func (e *secretsNotOptedIn) Error() string { return e.message("", "") }

func (e *secretsNotOptedIn) reason() string { return echov1alpha1.ReasonSecretNotOptedIn }

// message says which Secrets lack the label and how to fix it; then, when
// given, says what follows the label (the refused operation does not go
// on by itself), and otherwise what to do when the Secrets hold no storage
// credentials (by default, name one that does).
func (e *secretsNotOptedIn) message(then, otherwise string) string {
	quoted := make([]string, len(e.secrets))
	for i, s := range e.secrets {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	subject, they, holds, them := "Secret "+quoted[0]+" has", "it", "holds", "it"
	if len(e.secrets) > 1 {
		subject, they, holds, them = "Secrets "+strings.Join(quoted, ", ")+" have", "they", "hold", "them"
	}
	fix := fmt.Sprintf("kubectl label secret -n %s %s %s=true", e.namespace, strings.Join(e.secrets, " "), echov1alpha1.StorageSecretLabel)
	if then != "" {
		fix += ", then " + then
	}
	if otherwise == "" {
		otherwise = "name a Secret that has the label"
	}
	return fmt.Sprintf("%s no label %s=true, which echo-operator requires before it gives a Secret to a data mover as storage credentials or CA bundle: "+
		"if %s %s this storage's credentials or CA bundle, label %s (%s); if not, %s",
		subject, echov1alpha1.StorageSecretLabel, they, holds, them, fix, otherwise)
}

// secretsNotFound holds a data mover Job back: Secrets of namespace that
// its storage names do not exist. It is no refusal: the work waits,
// Pending, until they exist (their creation with the label brings it
// back), and no Job names them before: whatever Secret of that name
// appeared while the Job waited would be read by its pod, label or not.
type secretsNotFound struct {
	namespace string
	secrets   []string
}

func (e *secretsNotFound) Error() string { return e.message("") }

// message says which Secrets are missing and how to go on; then, when
// given, what follows.
func (e *secretsNotFound) message(then string) string {
	quoted := make([]string, len(e.secrets))
	for i, s := range e.secrets {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	subject, it := "Secret "+quoted[0]+" does", "it"
	if len(e.secrets) > 1 {
		subject, it = "Secrets "+strings.Join(quoted, ", ")+" do", "them"
	}
	msg := fmt.Sprintf("%s not exist in namespace %s: create %s, labelled as storage credentials (kubectl label secret -n %s %s %s=true), "+
		"or correct the storage's Secret names", subject, e.namespace, it, e.namespace, strings.Join(e.secrets, " "), echov1alpha1.StorageSecretLabel)
	if then != "" {
		msg += "; " + then
	}
	return msg
}

// startsWaitingForSecrets reports whether work with these conditions
// does not wait for a storage Secret yet: its Event is due.
func startsWaitingForSecrets(conditions []metav1.Condition) bool {
	c := meta.FindStatusCondition(conditions, echov1alpha1.BackupConditionComplete)
	return c == nil || c.Reason != echov1alpha1.ReasonSecretNotFound
}

// asSecretsNotFound finds the wait in err.
func asSecretsNotFound(err error) (*secretsNotFound, bool) {
	var missing *secretsNotFound
	return missing, errors.As(err, &missing)
}

// asSecretsNotOptedIn finds the refusal in err.
func asSecretsNotOptedIn(err error) (*secretsNotOptedIn, bool) {
	var refused *secretsNotOptedIn
	return refused, errors.As(err, &refused)
}

// storageOptedIn checks that what storage names in namespace opted in:
// its claim carries BackupStorageClaimLabel (claimOptedIn); every Secret
// exists (else a *secretsNotFound: no Job may name a Secret that whoever
// creates it later chooses) and carries StorageSecretLabel (else a
// *secretsNotOptedIn); the Secret of an SSE-C key allows the storage's
// endpoint, unless cluster, the administrator's, does; and when the storage authenticates with an identity, its
// ServiceAccount opted in (identityOptedIn). It reads only metadata, from
// the API server (api): the operator neither caches these Secrets nor
// reads their data for this.
func storageOptedIn(ctx context.Context, api client.Reader, namespace string, storage echov1alpha1.BackupStorage, cluster storagesecrets.ClusterEndpoints) error {
	if err := claimOptedIn(ctx, api, namespace, storage.PersistentVolumeClaim); err != nil {
		return err
	}
	names := storage.SecretNames()
	found, err := storagesecrets.Read(ctx, api, namespace, names)
	if err != nil {
		return err
	}
	if missing := found.Missing(names); len(missing) > 0 {
		return &secretsNotFound{namespace: namespace, secrets: missing}
	}
	if refused := found.NotOptedIn(names); len(refused) > 0 {
		return &secretsNotOptedIn{namespace: namespace, secrets: refused}
	}
	if err := customerKeyAllowed(found, storage.S3, cluster); err != nil {
		return err
	}
	return identityOptedIn(ctx, api, namespace, storage.S3, cluster)
}

// customerKeyAllowed checks that s's endpoint, where every request sends
// the SSE-C key, if any, is listed by cluster or by the key's Secret.
func customerKeyAllowed(found storagesecrets.Found, s *echov1alpha1.S3Storage, cluster storagesecrets.ClusterEndpoints) error {
	key := s.CustomerKey()
	if key == nil {
		return nil
	}
	if refused := cluster.Refusal("secret", found[key.Name], s.Endpoint); refused != nil {
		return &endpointNotAllowed{*refused}
	}
	return nil
}

// allChecks runs checks in order, up to the first that fails: one check
// for ensureOwnedJob.
func allChecks(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, check := range checks {
			if err := check(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// storageOptInCheck is storageOptedIn as ensureOwnedJob's check
// before it creates a Job.
func storageOptInCheck(api client.Reader, namespace string, storage echov1alpha1.BackupStorage, cluster storagesecrets.ClusterEndpoints) func(context.Context) error {
	return func(ctx context.Context) error {
		return storageOptedIn(ctx, api, namespace, storage, cluster)
	}
}

// identityNotOptedIn refuses a data mover Job that would run as a
// ServiceAccount that does not exist, lacks StorageIdentityLabel, or does
// not allow the audience of the token asked for. A Job's pod may run as
// any ServiceAccount of its namespace and have a token projected for any
// audience: without this, a user who may create EchoBackups but not pods
// could have a token of any ServiceAccount (for kube-apiserver's own
// audience, say) sent to an endpoint of theirs.
type identityNotOptedIn struct {
	namespace, serviceAccount, audience string
	missing, unlabelled                 bool
}

func (e *identityNotOptedIn) Error() string { return e.message("", "") }

func (e *identityNotOptedIn) reason() string { return echov1alpha1.ReasonIdentityNotOptedIn }

func (e *identityNotOptedIn) message(then, _ string) string {
	var msg string
	switch {
	case e.missing:
		msg = fmt.Sprintf("ServiceAccount %q of storage.s3.identity does not exist in namespace %s: create it, or name another", e.serviceAccount, e.namespace)
	case e.unlabelled:
		msg = fmt.Sprintf("ServiceAccount %q has no label %s=true, which echo-operator requires before it runs a data mover as a ServiceAccount: "+
			"if it is the storage's identity, label it (kubectl label serviceaccount -n %s %s %s=true); if not, name the one that is",
			e.serviceAccount, echov1alpha1.StorageIdentityLabel, e.namespace, e.serviceAccount, echov1alpha1.StorageIdentityLabel)
	default:
		msg = fmt.Sprintf("ServiceAccount %q does not allow tokens for the audience %q: if the storage's STS expects it, add it to the ServiceAccount's annotation %s "+
			"(comma-separated; without it only %s is allowed)", e.serviceAccount, e.audience, echov1alpha1.StorageIdentityAudiencesAnnotation,
			echov1alpha1.DefaultIdentityAudience)
	}
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// identityOptedIn checks the ServiceAccount of s's identity, if any: it
// exists, carries StorageIdentityLabel, allows the audience and the
// endpoints its token and credentials go to, unless cluster does
// (identityEndpointsAllowed). It reads only the ServiceAccount's
// metadata, from the API server (api).
func identityOptedIn(ctx context.Context, api client.Reader, namespace string, s *echov1alpha1.S3Storage, cluster storagesecrets.ClusterEndpoints) error {
	name := s.ServiceAccountName()
	if name == "" {
		return nil
	}
	audience := moverprotocol.ResolveS3(s).Audience
	sa := &metav1.PartialObjectMetadata{}
	sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
	err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sa)
	refused := &identityNotOptedIn{namespace: namespace, serviceAccount: name, audience: audience}
	switch {
	case apierrors.IsNotFound(err):
		refused.missing = true
		return refused
	case err != nil:
		return fmt.Errorf("reading the labels of ServiceAccount %s: %w", name, err)
	case sa.Labels[echov1alpha1.StorageIdentityLabel] != "true":
		refused.unlabelled = true
		return refused
	case !slices.Contains(allowedAudiences(sa.Annotations), audience):
		return refused
	}
	return identityEndpointsAllowed(sa, s, cluster)
}

// allowedAudiences are the audiences an opted-in ServiceAccount with these
// annotations allows.
func allowedAudiences(annotations map[string]string) []string {
	list, ok := annotations[echov1alpha1.StorageIdentityAudiencesAnnotation]
	if !ok {
		return []string{echov1alpha1.DefaultIdentityAudience}
	}
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
