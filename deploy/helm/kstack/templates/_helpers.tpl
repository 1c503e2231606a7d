{{/*
Object names are fixed, not derived from the release name: the operator finds its webhook
Service, configurations, TLS Secret and Lease by these names, and the cluster-scoped objects
(CRDs, ClusterRole, webhook configurations) allow one kstack per cluster anyway.
*/}}

{{/* Labels of every object, as in the kustomize base (no Helm-specific labels, so that the
chart renders exactly the base's objects). */}}
{{- define "kstack.labels" -}}
app.kubernetes.io/name: kstack
{{- end }}

{{/* The operator pods' labels: the Deployment's selector, the Service's and the PDB's. */}}
{{- define "kstack.operatorLabels" -}}
app.kubernetes.io/name: kstack
app.kubernetes.io/component: operator
{{- end }}

{{- define "kstack.webhookLabels" -}}
app.kubernetes.io/name: kstack
app.kubernetes.io/component: webhook
{{- end }}

{{- define "kstack.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
