package moverrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// reportPollInterval is how often RunJob looks for the Job's completed pod.
const reportPollInterval = 100 * time.Millisecond

// Runner runs data movers for the pods of mover Jobs.
type Runner struct {
	// Binary is the manager binary, whose subcommands are the mover.
	Binary string
	// Client reads the ConfigMaps and Secrets the pods refer to and
	// writes the pods' status.
	Client client.Client
	// ClaimDir is the local directory standing for a claim of a
	// namespace; it is created when missing.
	ClaimDir func(namespace, claim string) string
	// WorkDir receives a scratch directory per mover run.
	WorkDir string
}

// OneDir is a ClaimDir that maps every claim to dir.
func OneDir(dir string) func(namespace, claim string) string {
	return func(string, string) string { return dir }
}

// Result is what one run of the mover came to.
type Result struct {
	// Message is the mover's termination log: its JSON result.
	Message string
	// Output is the mover's combined standard output and error.
	Output []byte
	// ExitCode is the mover's exit code.
	ExitCode int
}

// Succeeded reports whether the mover exited 0.
func (r Result) Succeeded() bool { return r.ExitCode == moverprotocol.ExitSucceeded }

// Run runs the mover as the mover container of spec would run in namespace
// and returns its result. A mover that runs and fails is a Result with its
// exit code, not an error.
func (r *Runner) Run(ctx context.Context, namespace string, spec *corev1.PodSpec) (Result, error) {
	container, err := moverContainer(spec)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(r.WorkDir, 0o700); err != nil {
		return Result{}, fmt.Errorf("creating the work directory: %w", err)
	}
	work, err := os.MkdirTemp(r.WorkDir, "mover-")
	if err != nil {
		return Result{}, fmt.Errorf("creating a scratch directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()

	mounts, err := r.mountVolumes(ctx, namespace, spec, container, work)
	if err != nil {
		return Result{}, err
	}
	env, err := r.containerEnv(ctx, namespace, container, mounts)
	if err != nil {
		return Result{}, err
	}
	termination := filepath.Join(work, "termination-log")
	args := append(mapArgs(container.Args, mounts), moverprotocol.Arg(moverprotocol.FlagTerminationLog, termination))
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Env = env
	cmd.Dir = work
	out, runErr := cmd.CombinedOutput()
	res := Result{Output: out}
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		res.ExitCode = exit.ExitCode()
	case runErr != nil:
		return res, fmt.Errorf("running the mover: %w", runErr)
	}
	msg, err := os.ReadFile(termination)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("reading the termination log: %w", err)
	}
	res.Message = string(msg)
	return res, nil
}

// moverContainer is the mover's container of a pod spec.
func moverContainer(spec *corev1.PodSpec) (*corev1.Container, error) {
	for i := range spec.Containers {
		if spec.Containers[i].Name == moverprotocol.ContainerName {
			return &spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("the pod has no container %q", moverprotocol.ContainerName)
}

// mountVolumes makes a local directory for every mount of the container
// and returns them by mount path.
func (r *Runner) mountVolumes(ctx context.Context, namespace string, spec *corev1.PodSpec, c *corev1.Container, work string) (map[string]string, error) {
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount %s names no volume", m.Name)
		}
		dir, err := r.volumeDir(ctx, namespace, spec, v, filepath.Join(work, "volumes", v.Name))
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		mounts[m.MountPath] = filepath.Join(dir, m.SubPath)
	}
	return mounts, nil
}

// volumeDir is the local directory standing for a volume of the pod spec:
// the claim's directory, or scratch filled with a ConfigMap's or Secret's
// keys or the pod's ServiceAccount tokens, or an empty scratch directory.
func (r *Runner) volumeDir(ctx context.Context, namespace string, spec *corev1.PodSpec, v corev1.Volume, scratch string) (string, error) {
	switch {
	case v.PersistentVolumeClaim != nil:
		dir := r.ClaimDir(namespace, v.PersistentVolumeClaim.ClaimName)
		return dir, os.MkdirAll(dir, 0o750)
	case v.ConfigMap != nil:
		cm := &corev1.ConfigMap{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: v.ConfigMap.Name}, cm); err != nil {
			return "", fmt.Errorf("reading ConfigMap %s: %w", v.ConfigMap.Name, err)
		}
		data := map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		return scratch, writeKeys(scratch, data, v.ConfigMap.Items)
	case v.Secret != nil:
		s := &corev1.Secret{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: v.Secret.SecretName}, s); err != nil {
			return "", fmt.Errorf("reading Secret %s: %w", v.Secret.SecretName, err)
		}
		return scratch, writeKeys(scratch, s.Data, v.Secret.Items)
	case v.EmptyDir != nil:
		return scratch, os.MkdirAll(scratch, 0o700)
	case v.Projected != nil:
		return scratch, r.writeTokens(ctx, namespace, spec.ServiceAccountName, v.Projected.Sources, scratch)
	}
	return "", errors.New("unsupported volume source")
}

// writeTokens writes the ServiceAccount tokens of a projected volume into
// dir, each requested from kube-apiserver (TokenRequest) for its audience
// and lifetime, as the kubelet does for the pod's ServiceAccount.
func (r *Runner) writeTokens(ctx context.Context, namespace, serviceAccount string, sources []corev1.VolumeProjection, dir string) error {
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, src := range sources {
		t := src.ServiceAccountToken
		if t == nil {
			return errors.New("unsupported projection: only ServiceAccount tokens")
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: serviceAccount}}
		req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: t.ExpirationSeconds}}
		if t.Audience != "" {
			req.Spec.Audiences = []string{t.Audience}
		}
		if err := r.Client.SubResource("token").Create(ctx, sa, req); err != nil {
			return fmt.Errorf("requesting a token of ServiceAccount %s: %w", serviceAccount, err)
		}
		if err := os.WriteFile(filepath.Join(dir, t.Path), []byte(req.Status.Token), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeKeys writes a ConfigMap's or Secret's keys into dir, as files named
// after the keys or, with items, after the items' paths.
func writeKeys(dir string, data map[string][]byte, items []corev1.KeyToPath) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := map[string]string{}
	for k := range data {
		files[k] = k
	}
	if len(items) > 0 {
		files = map[string]string{}
		for _, it := range items {
			files[it.Key] = it.Path
		}
	}
	for key, name := range files {
		value, ok := data[key]
		if !ok {
			return fmt.Errorf("no key %q", key)
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, value, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// mapArgs replaces, in flags of the form --name=value, a value inside a
// mount path by the same path inside the mount's local directory.
func mapArgs(args []string, mounts map[string]string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			a = name + "=" + mapPath(value, mounts)
		}
		out = append(out, a)
	}
	return out
}

// mapPath is value, or, when it is a path inside a mount path, the same
// path inside the mount's local directory. The longest mount path matching
// wins.
func mapPath(value string, mounts map[string]string) string {
	paths := make([]string, 0, len(mounts))
	for p := range mounts {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		if value == p || strings.HasPrefix(value, p+"/") {
			return mounts[p] + strings.TrimPrefix(value, p)
		}
	}
	return value
}

// containerEnv is this process's environment, without any S3 credentials
// of its own, and the container's, with references to Secrets and
// ConfigMaps resolved as the kubelet resolves them, and paths inside
// mounts (the file of a web identity token) made local.
func (r *Runner) containerEnv(ctx context.Context, namespace string, c *corev1.Container, mounts map[string]string) ([]string, error) {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "AWS_") {
			env = append(env, e)
		}
	}
	for _, e := range c.Env {
		value, err := r.envValue(ctx, namespace, e)
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", e.Name, err)
		}
		env = append(env, e.Name+"="+mapPath(value, mounts))
	}
	return env, nil
}

func (r *Runner) envValue(ctx context.Context, namespace string, e corev1.EnvVar) (string, error) {
	switch {
	case e.ValueFrom == nil:
		return e.Value, nil
	case e.ValueFrom.SecretKeyRef != nil:
		ref := e.ValueFrom.SecretKeyRef
		s := &corev1.Secret{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, s); err != nil {
			return "", fmt.Errorf("reading Secret %s: %w", ref.Name, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), nil
	case e.ValueFrom.ConfigMapKeyRef != nil:
		ref := e.ValueFrom.ConfigMapKeyRef
		cm := &corev1.ConfigMap{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, cm); err != nil {
			return "", fmt.Errorf("reading ConfigMap %s: %w", ref.Name, err)
		}
		return cm.Data[ref.Key], nil
	}
	return "", errors.New("unsupported value source")
}

// Report writes res as the terminated state of the pod's mover container,
// as the kubelet reports a container that ended.
func (r *Runner) Report(ctx context.Context, pod types.NamespacedName, res Result) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &corev1.Pod{}
		if err := r.Client.Get(ctx, pod, p); err != nil {
			return err
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{terminatedStatus(p, res)}
		return r.Client.Status().Update(ctx, p)
	})
	if err != nil {
		return fmt.Errorf("reporting the mover's result on pod %s: %w", pod, err)
	}
	return nil
}

func terminatedStatus(p *corev1.Pod, res Result) corev1.ContainerStatus {
	reason := "Completed"
	if !res.Succeeded() {
		reason = "Error"
	}
	image := ""
	if c, err := moverContainer(&p.Spec); err == nil {
		image = c.Image
	}
	return corev1.ContainerStatus{
		Name: moverprotocol.ContainerName, Image: image, Ready: false,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(res.ExitCode), Reason: reason, Message: res.Message, FinishedAt: metav1.Now()}},
	}
}

// RunJob runs the mover of a Job's pod template, waits until KWOK has
// completed the Job's pod and reports the result on it. It returns the
// result even when the mover failed; the error says why nothing could be
// run or reported.
func (r *Runner) RunJob(ctx context.Context, job *batchv1.Job) (Result, error) {
	res, err := r.Run(ctx, job.Namespace, &job.Spec.Template.Spec)
	if err != nil {
		return res, err
	}
	pod, err := r.completedPod(ctx, job)
	if err != nil {
		return res, err
	}
	return res, r.Report(ctx, pod, res)
}

// completedPod waits for a pod of the Job that has succeeded.
func (r *Runner) completedPod(ctx context.Context, job *batchv1.Job) (types.NamespacedName, error) {
	var found types.NamespacedName
	err := wait.PollUntilContextCancel(ctx, reportPollInterval, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(job.Namespace),
			client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
			return false, nil //nolint:nilerr // a failed list is tried again
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				found = client.ObjectKeyFromObject(&p)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return found, fmt.Errorf("waiting for the completed pod of Job %s: %w", job.Name, err)
	}
	return found, nil
}

// hasResult reports whether the pod's mover container already shows a
// terminated state with a message: the pod was handled.
func hasResult(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == moverprotocol.ContainerName && cs.State.Terminated != nil && cs.State.Terminated.Message != "" {
			return true
		}
	}
	return false
}
