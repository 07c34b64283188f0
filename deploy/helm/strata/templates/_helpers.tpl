{{/* Names and labels shared by the templates. */}}
{{- define "strata.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "strata.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "strata.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount of a component (.name: agent or collector). */}}
{{- define "strata.serviceAccount" -}}
{{- default (printf "%s-%s" (include "strata.fullname" .root) .name) .root.Values.serviceAccount.name -}}
{{- end -}}

{{- define "strata.labels" -}}
app.kubernetes.io/part-of: {{ include "strata.name" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of a component (.name: agent, collector or spark). */}}
{{- define "strata.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/name: {{ printf "%s-%s" (include "strata.name" .root) .name }}
{{- end -}}

{{/* The Secret and key of the token Prometheus sends. */}}
{{- define "strata.metricsToken" -}}
name: {{ default .Values.tokens.secret .Values.monitoring.tokenSecret.name | quote }}
key: {{ .Values.monitoring.tokenSecret.key | quote }}
{{- end -}}

{{/* --retention-max-bytes: collector.retention.maxBytes, or with the
embedded store maxPercent of its volume (sizes in Mi, Gi or Ti). */}}
{{- define "strata.retentionMaxBytes" -}}
{{- $r := .Values.collector.retention -}}
{{- if $r.maxBytes -}}
{{- $r.maxBytes -}}
{{- else if eq .Values.collector.store "duckdb" -}}
{{- $size := toString .Values.collector.duckdb.persistence.size -}}
{{- $unit := dict "Mi" 1 "Gi" 1024 "Ti" 1048576 -}}
{{- $m := regexFindAll "^([0-9]+)(Mi|Gi|Ti)$" $size -1 -}}
{{- if not $m -}}
{{- fail (printf "collector.duckdb.persistence.size=%q: give collector.retention.maxBytes, or a size in Mi, Gi or Ti" $size) -}}
{{- end -}}
{{- $n := regexFind "^[0-9]+" $size | int64 -}}
{{- $u := index $unit (trimPrefix (toString $n) $size) -}}
{{- printf "%dMiB" (div (mul $n $u (int64 $r.maxPercent)) 100) -}}
{{- end -}}
{{- end -}}

{{- define "strata.image" -}}
{{- $img := index .root.Values.image .name -}}
{{- printf "%s%s:%s" .root.Values.image.registry $img.repository (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{- define "strata.collectorService" -}}
{{- printf "%s-collector" (include "strata.fullname" .) -}}
{{- end -}}

{{- define "strata.collectorAddress" -}}
{{- default (printf "%s.%s.svc:%d" (include "strata.collectorService" .) .Release.Namespace (int .Values.collector.grpcPort)) .Values.agent.collector -}}
{{- end -}}

{{/* The JVM options `strata hook-opts --install-hook hookFilesDir --hook-socket hookDir/hook.sock` prints. */}}
{{- define "strata.hookOpts" -}}
{{- $lib := printf "%s/libstratahook.so" .Values.agent.hookFilesDir -}}
{{- $jar := printf "%s/strata-hook.jar" .Values.agent.hookFilesDir -}}
{{- printf "-agentpath:%s=jar=%s,socket=%s/hook.sock" $lib $jar .Values.agent.hookDir -}}
{{- end -}}

{{/* Checks of value combinations that cannot work. */}}
{{- define "strata.validate" -}}
{{- if and (not .Values.insecure) (not .Values.tls.enabled) -}}
{{- fail "tls.enabled=false needs insecure=true: agents would push batches (and users read PFNs) without credentials" -}}
{{- end -}}
{{- if and (not .Values.insecure) (not .Values.tokens.secret) -}}
{{- fail "tokens.secret is empty: the HTTP endpoints (/metrics, /healthz) need tokens, or set insecure=true" -}}
{{- end -}}
{{- if and (eq .Values.collector.store "duckdb") (gt (int .Values.collector.replicas) 1) -}}
{{- fail "collector.store=duckdb runs one replica (the embedded store has one writer); use collector.store=clickhouse to scale out" -}}
{{- end -}}
{{- if not (has .Values.collector.store (list "duckdb" "clickhouse")) -}}
{{- fail (printf "collector.store=%q: want duckdb or clickhouse" .Values.collector.store) -}}
{{- end -}}
{{- end -}}
