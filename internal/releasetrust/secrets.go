package releasetrust

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// SecretClient wraps the Secrets client of Helm's storage driver: every
// Secret it writes is signed, and every Secret it reads that does not
// verify is hidden, as if it did not exist. Helm therefore never decodes,
// trusts, upgrades over, rolls back to or deletes a record the operator
// did not write. inner is the client of namespace's Secrets.
func (s *Signer) SecretClient(inner corev1client.SecretInterface, namespace string) corev1client.SecretInterface {
	return &signingSecrets{SecretInterface: inner, signer: s, namespace: namespace}
}

type signingSecrets struct {
	corev1client.SecretInterface
	signer    *Signer
	namespace string
}

// sign signs a Secret about to be written. Helm leaves the namespace to
// the namespaced client; the signature covers it, so it is set first.
func (c *signingSecrets) sign(in *corev1.Secret) {
	in.Namespace = c.namespace
	c.signer.Sign(in)
}

var secretsResource = corev1.Resource("secrets")

// Create implements corev1client.SecretInterface. A Secret the operator
// did not write that sits where the next revision must go is reported as
// such: it is the tenant's to remove, never the operator's to overwrite.
func (c *signingSecrets) Create(ctx context.Context, in *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	c.sign(in)
	out, err := c.SecretInterface.Create(ctx, in, opts)
	if !apierrors.IsAlreadyExists(err) {
		return out, err
	}
	existing, getErr := c.SecretInterface.Get(ctx, in.Name, metav1.GetOptions{})
	if getErr == nil && !c.signer.Verify(existing) {
		return nil, &UntrustedRecordError{Namespace: in.Namespace, Name: in.Name}
	}
	return out, err
}

// Update implements corev1client.SecretInterface.
func (c *signingSecrets) Update(ctx context.Context, in *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	c.sign(in)
	return c.SecretInterface.Update(ctx, in, opts)
}

// Get implements corev1client.SecretInterface.
func (c *signingSecrets) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	out, err := c.SecretInterface.Get(ctx, name, opts)
	if err != nil {
		return out, err
	}
	if !c.signer.Verify(out) {
		return nil, apierrors.NewNotFound(secretsResource, name)
	}
	return out, nil
}

// listPageSize is how many Secrets List reads at a time. Anyone who may
// create Secrets in a namespace can label any number of them, each up to
// 1 MiB, as a release's records: a page bounds what one read holds before
// the ones the operator did not write are dropped.
const listPageSize = 16

// List implements corev1client.SecretInterface. It reads page by page and
// keeps only the Secrets that verify.
func (c *signingSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	paged := opts.Limit == 0
	if paged {
		opts.Limit = listPageSize
	}
	out := &corev1.SecretList{}
	for {
		page, err := c.SecretInterface.List(ctx, opts)
		if err != nil {
			return page, err
		}
		for i := range page.Items {
			if c.signer.Verify(&page.Items[i]) {
				out.Items = append(out.Items, page.Items[i])
			}
		}
		out.ListMeta = page.ListMeta
		if !paged || page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

// UntrustedRecordError says that a Secret the operator did not write holds
// the name of the release revision it is about to store.
type UntrustedRecordError struct {
	Namespace, Name string
}

func (e *UntrustedRecordError) Error() string {
	return fmt.Sprintf("Secret %s/%s is in the way of the next release revision: it carries Helm's release labels "+
		"but echo-operator did not write it, or it was changed since; delete it to let the release proceed", e.Namespace, e.Name)
}
