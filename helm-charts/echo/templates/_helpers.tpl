{{/*
Name of the application; the value of app.kubernetes.io/name.
*/}}
{{- define "echo.name" -}}
{{- .Chart.Name -}}
{{- end -}}

{{/*
Name of every object of the release: the release name, which the operator
sets to the name of the Echo resource.
*/}}
{{- define "echo.fullname" -}}
{{- .Release.Name -}}
{{- end -}}

{{/*
Name of the PersistentVolumeClaim holding the data directory.
*/}}
{{- define "echo.pvcName" -}}
{{- printf "%s-data" (include "echo.fullname" .) -}}
{{- end -}}

{{/*
Chart name and version for the helm.sh/chart label.
*/}}
{{- define "echo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Version of the application for app.kubernetes.io/version: the tag of the
image when it is a valid label value, otherwise (digest-only references,
over-long tags) the chart's appVersion.
*/}}
{{- define "echo.version" -}}
{{- $ref := regexReplaceAll "@.*$" .Values.image "" -}}
{{- $last := last (splitList "/" $ref) -}}
{{- $tag := "" -}}
{{- if contains ":" $last -}}
{{- $tag = last (splitList ":" $last) -}}
{{- end -}}
{{- if regexMatch "^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$" $tag -}}
{{- $tag -}}
{{- else -}}
{{- .Chart.AppVersion -}}
{{- end -}}
{{- end -}}

{{/*
Selector labels: they identify the pods of one release and never change.
*/}}
{{- define "echo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "echo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Common labels of every object (and of the pods).
*/}}
{{- define "echo.labels" -}}
{{ include "echo.selectorLabels" . }}
app.kubernetes.io/version: {{ include "echo.version" . | quote }}
app.kubernetes.io/component: server
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "echo.chart" . }}
{{- end -}}

{{/*
Replica count: replicas as given, 0 while quiesced. The operator gives the
counts of the Echo's replica rules (DesiredReplicas in api/v1alpha1: at
least 3 with high availability); the chart does not recompute them.
*/}}
{{- define "echo.replicas" -}}
{{- if .Values.quiesced -}}
0
{{- else -}}
{{- int64 .Values.replicas -}}
{{- end -}}
{{- end -}}

{{/*
HPA minimum, as given. Fails when minReplicas exceeds maxReplicas.
*/}}
{{- define "echo.hpaMinReplicas" -}}
{{- $min := int64 .Values.autoscaling.minReplicas -}}
{{- if gt $min (int64 .Values.autoscaling.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas (%d) must not be greater than autoscaling.maxReplicas (%d)" $min (int64 .Values.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- $min -}}
{{- end -}}

{{/*
HPA maximum, as given.
*/}}
{{- define "echo.hpaMaxReplicas" -}}
{{- int64 .Values.autoscaling.maxReplicas -}}
{{- end -}}

{{/*
"true" when the Deployment must use the Recreate strategy: persistence is
enabled and the volume cannot be attached to two pods at once (no
ReadWriteMany access mode).
*/}}
{{- define "echo.recreate" -}}
{{- if and .Values.persistence.enabled (not (has "ReadWriteMany" .Values.persistence.accessModes)) -}}
true
{{- end -}}
{{- end -}}
