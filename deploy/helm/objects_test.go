package helm

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stratatrace/strata/collector/heuristics"
	"github.com/stratatrace/strata/test/testenv"
)

// The optional objects are absent by default.
func TestOffByDefault(t *testing.T) {
	o := mustRender(t, "")
	if len(o.monitoring)+len(o.pdbs)+len(o.ingresses)+len(o.policies) != 0 {
		t.Errorf("default render has monitoring %v, PDBs %v, ingresses %v, policies %v",
			keys(o.monitoring), keys(o.pdbs), keys(o.ingresses), keys(o.policies))
	}
	if _, ok := o.configMaps["strata-heuristics"]; ok {
		t.Error("heuristics ConfigMap without thresholds")
	}
	if got := keys(o.accounts); !slices.Equal(got, []string{"strata-agent", "strata-collector"}) {
		t.Errorf("accounts %v", got)
	}
}

// dig walks decoded JSON by keys (string) and indexes (int).
func dig(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

// The ServiceMonitor and PodMonitor select the collector's Service and the
// agents' pods, scrape their "http" port's /metrics, and send the token
// from the Secret the pods mount.
func TestMonitors(t *testing.T) {
	o := mustRender(t, "monitoring: {serviceMonitor: {enabled: true}, podMonitor: {enabled: true}, labels: {release: prom}}")
	sm, pm := o.monitoring["ServiceMonitor/strata-collector"], o.monitoring["PodMonitor/strata-agent"]
	if sm == nil || pm == nil {
		t.Fatalf("monitors %v", keys(o.monitoring))
	}
	svc := o.services["strata-collector"]
	agent := o.daemonSets["strata-agent"].Spec.Template
	for _, m := range []struct {
		obj       map[string]any
		endpoints string
		labels    map[string]string // what the selector must match
		ports     []string          // named ports of the target
		mounted   corev1.PodSpec    // the pod that mounts the token Secret
	}{
		{sm, "endpoints", svc.Labels, []string{svc.Spec.Ports[1].Name}, o.deployments["strata-collector"].Spec.Template.Spec},
		{pm, "podMetricsEndpoints", agent.Labels, []string{agent.Spec.Containers[0].Ports[0].Name}, agent.Spec},
	} {
		if dig(m.obj, "metadata", "labels", "release") != "prom" {
			t.Errorf("%v: monitoring.labels not applied", dig(m.obj, "kind"))
		}
		sel, _ := dig(m.obj, "spec", "selector", "matchLabels").(map[string]any)
		if len(sel) == 0 {
			t.Errorf("%v selects everything", dig(m.obj, "kind"))
		}
		for k, v := range sel {
			if m.labels[k] != v {
				t.Errorf("%v selects %s=%v; target has %q", dig(m.obj, "kind"), k, v, m.labels[k])
			}
		}
		ep := dig(m.obj, "spec", m.endpoints, 0)
		if dig(ep, "path") != "/metrics" || !slices.Contains(m.ports, fmt.Sprint(dig(ep, "port"))) {
			t.Errorf("%v endpoint %v, want /metrics on %v", dig(m.obj, "kind"), ep, m.ports)
		}
		cred := dig(ep, "authorization", "credentials")
		if dig(ep, "authorization", "type") != "Bearer" || dig(cred, "name") != "strata-tokens" || dig(cred, "key") != "tokens" {
			t.Errorf("%v authorization %v, want the token of strata-tokens/tokens", dig(m.obj, "kind"), dig(ep, "authorization"))
		}
		if v := volumeOf(m.mounted, "tokens"); v == nil || v.Secret == nil || v.Secret.SecretName != dig(cred, "name") {
			t.Errorf("%v: the pod does not mount the token Secret it accepts: %+v", dig(m.obj, "kind"), v)
		}
	}
	if dig(sm, "spec", "endpoints", 0, "scheme") != "https" || dig(sm, "spec", "endpoints", 0, "tlsConfig", "ca", "secret", "name") != "strata-agent-tls" ||
		dig(sm, "spec", "endpoints", 0, "tlsConfig", "serverName") != "strata-collector.strata.svc" {
		t.Errorf("collector endpoint %v: want https verified by the agents' CA", dig(sm, "spec", "endpoints", 0))
	}
	// Without credentials the monitors send none; a token Secret of its own.
	o = mustRender(t, "insecure: true\ntls: {enabled: false}\nmonitoring: {serviceMonitor: {enabled: true}, tokenSecret: {name: prom-token, key: t}}")
	if ep := dig(o.monitoring["ServiceMonitor/strata-collector"], "spec", "endpoints", 0); dig(ep, "authorization") != nil || dig(ep, "scheme") != nil {
		t.Errorf("insecure endpoint %v", ep)
	}
	o = mustRender(t, "monitoring: {podMonitor: {enabled: true}, tokenSecret: {name: prom-token, key: t}}")
	if c := dig(o.monitoring["PodMonitor/strata-agent"], "spec", "podMetricsEndpoints", 0, "authorization", "credentials"); dig(c, "name") != "prom-token" || dig(c, "key") != "t" {
		t.Errorf("credentials %v, want prom-token/t", c)
	}
}

var metricName = regexp.MustCompile(`\bstrata_[a-z_]+\b`)

// Every metric an alert names exists: the agent's in its golden /metrics,
// the collector's in the /metrics of a collector started for the test.
func TestAlertMetricsExist(t *testing.T) {
	o := mustRender(t, "monitoring: {prometheusRule: {enabled: true}}")
	rule := o.monitoring["PrometheusRule/strata"]
	rules, _ := dig(rule, "spec", "groups", 0, "rules").([]any)
	if len(rules) != 4 {
		t.Fatalf("rules %v", rules)
	}
	named := map[string]bool{}
	for _, r := range rules {
		expr := fmt.Sprint(dig(r, "expr"))
		if dig(r, "labels", "severity") != "warning" || dig(r, "for") != "10m" {
			t.Errorf("%v: labels %v, for %v", dig(r, "alert"), dig(r, "labels"), dig(r, "for"))
		}
		for _, m := range metricName.FindAllString(expr, -1) {
			named[m] = true
		}
	}
	if !named["strata_dropped_total"] || !named["strata_spool_pending_bytes"] || !named["strata_collector_store_writes_total"] {
		t.Errorf("alerts name %v", keys(named))
	}
	for _, values := range []string{"monitoring: {prometheusRule: {enabled: true}}", "agent: {spoolMaxBytes: 0}\nmonitoring: {prometheusRule: {enabled: true}}"} {
		// 0 is the agent's 1 GiB.
		r := dig(mustRender(t, values).monitoring["PrometheusRule/strata"], "spec", "groups", 0, "rules", 2, "expr")
		if !strings.HasSuffix(fmt.Sprint(r), "(strata_spool_pending_bytes) > 858993459") {
			t.Errorf("%s: spool alert %v, want 80 %% of 1 GiB", values, r)
		}
	}
	// strata_collector_* are the collector's; the others the agent's.
	t.Run("agent", func(t *testing.T) {
		golden, err := os.ReadFile("../../agent/testdata/metrics.golden")
		if err != nil {
			t.Fatal(err)
		}
		exposed := map[string]bool{}
		for l := range strings.SplitSeq(string(golden), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				exposed[strings.SplitN(f[0], "{", 2)[0]] = true
			}
		}
		for m := range named {
			if !strings.HasPrefix(m, "strata_collector_") && !exposed[m] {
				t.Errorf("an alert names %s, which is not in the agent's golden /metrics", m)
			}
		}
	})
	t.Run("collector", func(t *testing.T) {
		exposed := scrapeCollector(t)
		for m := range named {
			if strings.HasPrefix(m, "strata_collector_") && !exposed[m] {
				t.Errorf("an alert names %s, which the collector's /metrics lacks", m)
			}
		}
	})
}

// scrapeCollector starts the built collector (insecure, on loopback, with
// an embedded store in a temporary directory) and returns the metric
// names of its /metrics.
func scrapeCollector(t *testing.T) map[string]bool {
	t.Helper()
	bin := testenv.Built(t, "strata-collector")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--http", addr, "--insecure", "--store-dir", t.TempDir())
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil && resp.StatusCode == http.StatusOK {
			names := map[string]bool{}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) > 2 && f[0] == "#" && f[1] == "TYPE" {
					names[f[2]] = true
				}
			}
			resp.Body.Close()
			return names
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector's /metrics at %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The NetworkPolicies let agents reach the collector's gRPC port and the
// allowed clients its HTTP port; the PDB and the Ingress point at the
// collector.
func TestPolicyBudgetIngress(t *testing.T) {
	o := mustRender(t, `
networkPolicy: {enabled: true, allowedClients: [{namespaceSelector: {matchLabels: {name: monitoring}}}]}
collector:
  podDisruptionBudget: {enabled: true}
  ingress: {enabled: true, className: nginx, host: strata.example.org, tls: [{hosts: [strata.example.org], secretName: ui-tls}]}
`)
	collectorLabels := o.deployments["strata-collector"].Spec.Template.Labels
	agentLabels := o.daemonSets["strata-agent"].Spec.Template.Labels
	np := o.policies["strata-collector"]
	if np == nil || o.policies["strata-agent"] == nil {
		t.Fatalf("policies %v", keys(o.policies))
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if collectorLabels[k] != v {
			t.Errorf("collector policy selects %s=%s", k, v)
		}
	}
	if len(np.Spec.Ingress) != 2 || np.Spec.Ingress[0].Ports[0].Port.StrVal != "grpc" || np.Spec.Ingress[1].Ports[0].Port.StrVal != "http" {
		t.Fatalf("collector ingress rules %+v", np.Spec.Ingress)
	}
	from := np.Spec.Ingress[0].From
	if len(from) != 2 || from[0].PodSelector == nil || from[1].NamespaceSelector == nil {
		t.Errorf("gRPC from %+v: want the agents and the allowed clients", from)
	}
	for k, v := range from[0].PodSelector.MatchLabels {
		if agentLabels[k] != v {
			t.Errorf("gRPC peer selects %s=%s, not the agents", k, v)
		}
	}
	if h := np.Spec.Ingress[1].From; len(h) != 1 || h[0].NamespaceSelector == nil {
		t.Errorf("HTTP from %+v: want the allowed clients only", h)
	}
	pdb := o.pdbs["strata-collector"]
	if pdb == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "strata-collector" {
		t.Errorf("PDB %+v", pdb)
	}
	ing := o.ingresses["strata-collector"]
	if ing == nil || *ing.Spec.IngressClassName != "nginx" || ing.Spec.Rules[0].Host != "strata.example.org" || len(ing.Spec.TLS) != 1 {
		t.Fatalf("ingress %+v", ing)
	}
	if b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service; b.Name != "strata-collector" || b.Port.Name != "http" {
		t.Errorf("ingress backend %+v, want the collector Service's http port", b)
	}
	// Without allowed clients the collector's HTTP port takes no one.
	o = mustRender(t, "networkPolicy: {enabled: true}")
	if r := o.policies["strata-collector"].Spec.Ingress; len(r) != 1 || len(r[0].From) != 1 {
		t.Errorf("rules %+v", r)
	}
	if r := o.policies["strata-agent"].Spec.Ingress; len(r) != 0 {
		t.Errorf("agent rules %+v", r)
	}
}

// Wrong values fail with the schema's message, naming the value.
func TestSchemaRefuses(t *testing.T) {
	for _, tc := range []struct{ values, says string }{
		{"collector: {grpcPort: '7070'}", "at '/collector/grpcPort': got string, want integer"},
		{"agent: {httpPort: 70000}", "at '/agent/httpPort'"},
		{"agent: {nice: 20}", "at '/agent/nice': maximum: got 20, want 19"},
		{"collector: {nice: -1}", "at '/collector/nice': minimum: got -1, want 0"},
		{"colector: {replicas: 2}", "additional properties 'colector' not allowed"},
		{"collector: {retention: {maxAge: 30d}}", "at '/collector/retention/maxAge'"},
		{"collector: {retention: {maxBytes: 40G}}", "at '/collector/retention/maxBytes'"},
		{"agent: {faults: maybe}", "at '/agent/faults': value must be one of"},
		{"spark: {javaOptionsProperty: javaOptions}", "at '/spark/javaOptionsProperty'"},
		{"monitoring: {prometheusRule: {spoolFullRatio: 1.5}}", "at '/monitoring/prometheusRule/spoolFullRatio'"},
		// Prometheus durations, not Go's: no fractions, no "min".
		{"monitoring: {interval: 1.5m}", "at '/monitoring/interval'"},
		{"monitoring: {prometheusRule: {for: 10min}}", "at '/monitoring/prometheusRule/for'"},
		{"monitoring: {interval: ''}", "at '/monitoring/interval'"},
		{"monitoring: {labels: {release: 1}}", "at '/monitoring/labels/release'"},
		{"monitoring: {serviceMonitor: {enabled: 'yes'}}", "at '/monitoring/serviceMonitor/enabled'"},
		{"monitoring: {tokenSecret: {key: ''}}", "at '/monitoring/tokenSecret/key'"},
		{"nameOverride: a-name-of-more-than-forty-characters-in-all", "at '/nameOverride'"},
		{"serviceAccount: {create: 'false'}", "at '/serviceAccount/create'"},
		{"serviceAccount: {annotations: {team: [data]}}", "at '/serviceAccount/annotations/team'"},
		{"image: {pullPolicy: Sometimes}", "at '/image/pullPolicy'"},
		{"image: {agent: {repository: ''}}", "at '/image/agent/repository'"},
		{"imagePullSecrets: [{secret: registry}]", "at '/imagePullSecrets/0'"},
		{"tls: {enabled: 'true'}", "at '/tls/enabled'"},
		{"collector: {podDisruptionBudget: {minAvailable: half}}", "at '/collector/podDisruptionBudget/minAvailable'"},
		{"collector: {podDisruptionBudget: {minAvailable: -1}}", "at '/collector/podDisruptionBudget/minAvailable'"},
		{"collector: {ingress: {path: ui}}", "at '/collector/ingress/path'"},
		{"collector: {ingress: {enabled: true, hosts: [strata.example.com]}}", "additional properties 'hosts' not allowed"},
		{"collector: {service: {type: ExternalName}}", "at '/collector/service/type'"},
		{"collector: {heuristics: [mapper_gc]}", "at '/collector/heuristics'"},
		{"collector: {duckdb: {memoryLimit: 1gig}}", "at '/collector/duckdb/memoryLimit'"},
		{"collector: {clickhouse: {url: 'clickhouse:8123'}}", "at '/collector/clickhouse/url'"},
		{"collector: {extraVolumeMounts: [{name: events}]}", "at '/collector/extraVolumeMounts/0'"},
		{"collector: {podSecurityContext: nonroot}", "at '/collector/podSecurityContext'"},
		{"agent: {hookDir: run/strata}", "at '/agent/hookDir'"},
		{"agent: {hookSocketMode: '0999'}", "at '/agent/hookSocketMode'"},
		{"agent: {spoolMaxBytes: -1}", "at '/agent/spoolMaxBytes'"},
		{"agent: {tolerations: {operator: Exists}}", "at '/agent/tolerations'"},
		{"networkPolicy: {allowedClients: {podSelector: {}}}", "at '/networkPolicy/allowedClients'"},
	} {
		_, err := render(t, tc.values)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want an error saying %q", tc.values, err, tc.says)
		}
	}
}

// Names, accounts, security contexts, scheduling, priority, nice,
// retention, heuristics and the Spark property follow the values, and the
// collector's and the agent's loaders accept what the chart sets.
func TestOverrides(t *testing.T) {
	o := mustRender(t, `
fullnameOverride: trace
serviceAccount: {annotations: {team: data}}
collector:
  nice: 5
  priorityClassName: high
  retention: {maxAge: 168h, maxBytes: 100GB}
  heuristics: {mapper_gc: {gc_ratio_severity: "0.01, 0.02, 0.03, 0.04"}, job_queue_limit: {enabled: true}}
  podSecurityContext: {runAsUser: 1000, runAsNonRoot: true}
  securityContext: {readOnlyRootFilesystem: false}
  extraEnv: [{name: STRATA_COLLECTOR_THREADS, value: "2"}]
agent:
  nice: 19
  priorityClassName: node-critical
  podSecurityContext: {seLinuxOptions: {type: spc_t}}
  securityContext: {capabilities: {add: [SYS_ADMIN]}}
  nodeSelector: {spark: "yes"}
spark: {javaOptionsProperty: extraJavaOptions}
`)
	d, ds := o.deployments["trace-collector"], o.daemonSets["trace-agent"]
	if d == nil || ds == nil || o.services["trace-collector"] == nil || o.configMaps["trace-spark"] == nil {
		t.Fatalf("fullnameOverride: deployments %v, daemonsets %v", keys(o.deployments), keys(o.daemonSets))
	}
	if a := o.accounts["trace-agent"]; a == nil || a.Annotations["team"] != "data" || ds.Spec.Template.Spec.ServiceAccountName != "trace-agent" {
		t.Errorf("agent account %+v", a)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if spec.PriorityClassName != "high" || *spec.SecurityContext.RunAsUser != 1000 || *c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("collector priority %q, pod security %+v, container security %+v", spec.PriorityClassName, spec.SecurityContext, c.SecurityContext)
	}
	cfg := loadCollector(t, c)
	if cfg.Nice != 5 || cfg.RetentionMaxBytes != 100e9 || cfg.RetentionMaxAge != 168*3600e9 || cfg.Threads != 2 ||
		cfg.Heuristics != "/etc/strata/heuristics/heuristics.yaml" {
		t.Errorf("collector nice %d, retention %v %d, threads %d, heuristics %q", cfg.Nice, cfg.RetentionMaxAge, cfg.RetentionMaxBytes, cfg.Threads, cfg.Heuristics)
	}
	cm := o.configMaps["trace-heuristics"]
	if cm == nil {
		t.Fatalf("no heuristics ConfigMap; have %v", keys(o.configMaps))
	}
	// The collector's loader reads the file and takes its thresholds.
	file := filepath.Join(t.TempDir(), "heuristics.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["heuristics.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	hc, err := heuristics.LoadConfig(file)
	if err != nil {
		t.Fatalf("the collector refuses the chart's heuristics file: %v\n%s", err, cm.Data["heuristics.yaml"])
	}
	if hc == nil || !strings.Contains(fmt.Sprintf("%+v", *hc), "0.01") {
		t.Errorf("heuristics config %+v lacks the threshold 0.01", hc)
	}
	// ... and refuses a misspelt key, so the check above can fail.
	bad := mustRender(t, "collector: {heuristics: {mapper_gc: {gc_ratio_severit: '1, 2, 3, 4'}}}").configMaps["strata-heuristics"]
	os.WriteFile(file, []byte(bad.Data["heuristics.yaml"]), 0o644)
	if _, err := heuristics.LoadConfig(file); err == nil {
		t.Errorf("a misspelt heuristics key loads:\n%s", bad.Data["heuristics.yaml"])
	}
	if m := mountsOf(c)["/etc/strata/heuristics"]; m.Name != "heuristics" || volumeOf(spec, "heuristics").ConfigMap.Name != "trace-heuristics" ||
		d.Spec.Template.Annotations["checksum/heuristics"] == "" {
		t.Errorf("heuristics mount %+v, annotations %v", m, d.Spec.Template.Annotations)
	}
	as := ds.Spec.Template.Spec
	if as.PriorityClassName != "node-critical" || as.SecurityContext.SELinuxOptions.Type != "spc_t" || as.NodeSelector["spark"] != "yes" {
		t.Errorf("agent pod %+v", as)
	}
	// Maps merge with the defaults: the override adds to them.
	if sc := as.Containers[0].SecurityContext; !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_ADMIN"}) || *sc.RunAsUser != 0 {
		t.Errorf("agent security %+v", sc)
	}
	if envOf(as.Containers[0])["STRATA_NICE"] != "19" {
		t.Errorf("agent env %v", envOf(as.Containers[0]))
	}
	if conf := o.configMaps["trace-spark"].Data["spark-defaults.conf"]; !strings.HasPrefix(conf, "spark.executor.extraJavaOptions -agentpath:") {
		t.Errorf("spark-defaults.conf:\n%s", conf)
	}

	// nameOverride renames objects and labels; one named account.
	o = mustRender(t, "nameOverride: memtrace\nserviceAccount: {name: shared}")
	if o.daemonSets["strata-memtrace-agent"] == nil || o.deployments["strata-memtrace-collector"].Labels["app.kubernetes.io/name"] != "memtrace-collector" {
		t.Errorf("nameOverride: %v %v", keys(o.daemonSets), keys(o.deployments))
	}
	if keys(o.accounts)[0] != "shared" || len(o.accounts) != 1 ||
		o.deployments["strata-memtrace-collector"].Spec.Template.Spec.ServiceAccountName != "shared" {
		t.Errorf("accounts %v", keys(o.accounts))
	}
	o = mustRender(t, "serviceAccount: {create: false}")
	if len(o.accounts) != 0 {
		t.Errorf("accounts %v with create false", keys(o.accounts))
	}
	// The default byte bound is maxPercent of the volume.
	o = mustRender(t, "collector: {duckdb: {persistence: {size: 1Ti}}, retention: {maxPercent: 50}}")
	if got := loadCollector(t, o.deployments["strata-collector"].Spec.Template.Spec.Containers[0]).RetentionMaxBytes; got != 1<<39 {
		t.Errorf("retention bytes %d, want half of 1 TiB", got)
	}
	if _, err := render(t, "collector: {duckdb: {persistence: {size: 50G}}}"); err == nil || !strings.Contains(err.Error(), "give collector.retention.maxBytes") {
		t.Errorf("size 50G: %v", err)
	}
	if o := mustRender(t, "collector: {store: clickhouse}"); envOf(o.deployments["strata-collector"].Spec.Template.Spec.Containers[0])["STRATA_COLLECTOR_RETENTION_MAX_BYTES"] != "" {
		t.Error("ClickHouse store gets the volume's byte bound")
	}
}
