{{/*
Every object's name is echo-operator-<name>, whatever the release's name:
the manager's arguments and its generated RBAC (files/manager-role.yaml,
files/live-api-role.yaml) name its Deployment, Services, Secret and
ClusterRoles so.
*/}}
{{- define "echo-operator.name" -}}
echo-operator-{{ . }}
{{- end -}}

{{/*
Labels of every object.
*/}}
{{- define "echo-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: echo-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
Labels of the manager's pods, and the selector of its Deployment, PDB and
Services (the same as config/manager's: a Deployment's selector cannot
change).
*/}}
{{- define "echo-operator.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: echo-operator
{{- end -}}

{{/*
Labels of the manager's objects: its Deployment, PDB and Services.
*/}}
{{- define "echo-operator.managerLabels" -}}
control-plane: controller-manager
{{ include "echo-operator.labels" . }}
{{- end -}}

{{/*
An image reference from (dict "image" .Values.image "root" .): by digest
when one is set, else by tag, v<appVersion> by default.
*/}}
{{- define "echo-operator.image" -}}
{{- if .image.digest -}}
{{ .image.repository }}@{{ .image.digest }}
{{- else -}}
{{ .image.repository }}:{{ .image.tag | default (printf "v%s" .root.Chart.AppVersion) }}
{{- end -}}
{{- end -}}

{{/*
The spec of a file of files/, a copy of config/ (`make manifests` keeps
it): the chart renders the same object as config/ with its own metadata.
*/}}
{{- define "echo-operator.fileSpec" -}}
{{- $obj := .root.Files.Get .file | fromYaml -}}
{{- if not $obj.spec -}}
{{- fail (printf "%s has no spec" .file) -}}
{{- end -}}
{{- toYaml $obj.spec -}}
{{- end -}}

{{/*
The rules of a ClusterRole of files/, generated from the RBAC markers.
*/}}
{{- define "echo-operator.fileRules" -}}
{{- $obj := .root.Files.Get .file | fromYaml -}}
{{- if not $obj.rules -}}
{{- fail (printf "%s has no rules" .file) -}}
{{- end -}}
{{- toYaml $obj.rules -}}
{{- end -}}
