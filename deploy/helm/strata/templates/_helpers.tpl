{{/* Names and labels shared by the templates. */}}
{{- define "strata.fullname" -}}
{{- if contains "strata" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-strata" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "strata.labels" -}}
app.kubernetes.io/part-of: strata
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "strata.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/name: {{ .name }}
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

{{/* The JVM options `strata hook-opts --dir hookFilesDir --socket hookDir/hook.sock` prints. */}}
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
