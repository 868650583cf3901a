package simcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Annotations that end a held Job pod (see Options.HeldJobPodNamespaces)
// the way a kubelet would report it.
const (
	// JobPodExitCodeAnnotation ends the pod's containers with this exit
	// code: "0" makes the pod Succeeded, anything else Failed.
	JobPodExitCodeAnnotation = "simcluster.echo.dev/exit-code"
	// JobPodMessageAnnotation is the containers' termination message.
	JobPodMessageAnnotation = "simcluster.echo.dev/message"
	// JobPodDisruptionAnnotation, set to a reason such as
	// EvictionByEvictionAPI or TerminationByKubelet, also gives the pod the
	// DisruptionTarget condition, as an eviction, a drain or a preemption
	// does.
	JobPodDisruptionAnnotation = "simcluster.echo.dev/disruption"
)

// heldJobPodStages writes the stages that hold Job pods in the given
// namespaces: KWOK's pod-complete stage, rewritten to skip them, and a
// stage that ends them once a test sets JobPodExitCodeAnnotation.
func heldJobPodStages(dir, podComplete string, namespaces []string) ([]string, error) {
	quoted := make([]string, len(namespaces))
	for i, ns := range namespaces {
		quoted[i] = "'" + ns + "'"
	}
	inNamespaces := "[" + strings.Join(quoted, ", ") + "]"

	b, err := os.ReadFile(podComplete)
	if err != nil {
		return nil, fmt.Errorf("kwok stage: %w", err)
	}
	const anchor = "  selector:\n    matchExpressions:\n"
	if !strings.Contains(string(b), anchor) {
		return nil, fmt.Errorf("kwok stage %s no longer has the selector layout it is rewritten from", podComplete)
	}
	skip := anchor + "    - key: '.metadata.namespace'\n      operator: 'NotIn'\n      values: " + inNamespaces + "\n"
	files := []string{filepath.Join(dir, "pod-complete.yaml"), filepath.Join(dir, "held-job-pod-finish.yaml")}
	if err := os.WriteFile(files[0], []byte(strings.Replace(string(b), anchor, skip, 1)), 0o600); err != nil {
		return nil, err
	}
	finish := strings.ReplaceAll(heldJobPodFinishStage, "NAMESPACES", inNamespaces)
	if err := os.WriteFile(files[1], []byte(finish), 0o600); err != nil {
		return nil, err
	}
	return files, nil
}

// heldJobPodFinishStage ends a held Job pod as its annotations say.
const heldJobPodFinishStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: held-job-pod-finish
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values: ['Job']
    - key: '.metadata.namespace'
      operator: 'In'
      values: NAMESPACES
    - key: '.metadata.annotations["` + JobPodExitCodeAnnotation + `"]'
      operator: 'Exists'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $annotations := or .metadata.annotations dict }}
      {{ $code := index $annotations "` + JobPodExitCodeAnnotation + `" }}
      {{ $message := or ( index $annotations "` + JobPodMessageAnnotation + `" ) "" }}
      {{ $disruption := or ( index $annotations "` + JobPodDisruptionAnnotation + `" ) "" }}
      conditions:
      {{ if $disruption }}
      - type: DisruptionTarget
        status: "True"
        reason: {{ $disruption | Quote }}
        message: "The pod was stopped by the cluster"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      - type: Ready
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: "False"
        reason: PodCompleted
        lastTransitionTime: {{ $now | Quote }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: {{ $code }}
            finishedAt: {{ $now | Quote }}
            reason: {{ if eq $code "0" }}Completed{{ else }}Error{{ end }}
            message: {{ $message | Quote }}
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: {{ if eq $code "0" }}Succeeded{{ else }}Failed{{ end }}
`
