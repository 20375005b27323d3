{{/*
Helpers of the samsa chart. The templates use only these functions:
include, printf, quote, toYaml, nindent, int and until (Helm's, and the
renderer of deploy/render_test.go).
*/}}

{{/* The StatefulSet's name: pods are <fullname>-<ordinal>. */}}
{{- define "samsa.fullname" -}}
{{ .Release.Name }}
{{- end -}}

{{/* The headless Service that gives every pod its DNS name. */}}
{{- define "samsa.headless" -}}
{{ .Release.Name }}-headless
{{- end -}}

{{/* The DNS domain of the pods: <pod>.<this>. */}}
{{- define "samsa.podDomain" -}}
{{ include "samsa.headless" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end -}}

{{- define "samsa.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "samsa.labels" -}}
{{ include "samsa.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
metadata.etcd.initial.cluster: one embedded etcd member per broker, named
samsa-<node id> as samsa names its member, at the pod's DNS name. The node
id is the pod ordinal (node.id 0 is valid).
*/}}
{{- define "samsa.initialCluster" -}}
{{- $fullname := include "samsa.fullname" . -}}
{{- $domain := include "samsa.podDomain" . -}}
{{- $port := .Values.ports.etcdPeer -}}
{{- range $i := until (int .Values.replicas) -}}
{{- if $i }},{{ end -}}
samsa-{{ $i }}=http://{{ $fullname }}-{{ $i }}.{{ $domain }}:{{ $port }}
{{- end -}}
{{- end -}}
