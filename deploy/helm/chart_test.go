package helm

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/stratatrace/strata/agent/config"
	"github.com/stratatrace/strata/collector/server"
	"github.com/stratatrace/strata/test/testenv"
)

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/strata.yaml from the chart")

// objects are the rendered chart, decoded.
type objects struct {
	daemonSets  map[string]*appsv1.DaemonSet
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	pvcs        map[string]*corev1.PersistentVolumeClaim
	accounts    map[string]*corev1.ServiceAccount
	pdbs        map[string]*policyv1.PodDisruptionBudget
	ingresses   map[string]*networkingv1.Ingress
	policies    map[string]*networkingv1.NetworkPolicy
	// monitoring holds the Prometheus Operator's objects, by "Kind/name",
	// as decoded JSON (their Go types are not among the chart's imports).
	monitoring map[string]map[string]any
	text       string // every document, in file order, as rendered
	notes      string
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// render renders the chart as release "strata" in namespace "strata" with
// values (YAML) over its defaults.
func render(t *testing.T, values string) (*objects, error) {
	t.Helper()
	ch, err := loader.Load("strata")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "strata", Namespace: "strata", IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	o := &objects{daemonSets: map[string]*appsv1.DaemonSet{}, deployments: map[string]*appsv1.Deployment{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		pvcs: map[string]*corev1.PersistentVolumeClaim{}, accounts: map[string]*corev1.ServiceAccount{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, ingresses: map[string]*networkingv1.Ingress{},
		policies: map[string]*networkingv1.NetworkPolicy{}, monitoring: map[string]map[string]any{}}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var text strings.Builder
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			o.notes = files[name]
			continue
		}
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range docSep.Split(files[name], -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			fmt.Fprintf(&text, "---\n# Source: %s\n%s\n", strings.TrimPrefix(name, "strata/"), strings.TrimSpace(doc))
			if err := o.decode(t, name, doc); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
		}
	}
	o.text = text.String()
	return o, nil
}

func stripComments(doc string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// decode reads one document strictly into its API type.
func (o *objects) decode(t *testing.T, file, doc string) error {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return err
	}
	var meta struct {
		APIVersion, Kind string
		Metadata         struct{ Name, Namespace string }
	}
	if err := json.Unmarshal(js, &meta); err != nil {
		return err
	}
	if meta.Metadata.Namespace != "strata" && meta.Kind != "" {
		return fmt.Errorf("%s %s in namespace %q, want the release's", meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	}
	name := meta.Metadata.Name
	switch meta.APIVersion + "/" + meta.Kind {
	case "apps/v1/DaemonSet":
		return into(o.daemonSets, name, strict)
	case "apps/v1/Deployment":
		return into(o.deployments, name, strict)
	case "v1/Service":
		return into(o.services, name, strict)
	case "v1/ConfigMap":
		return into(o.configMaps, name, strict)
	case "v1/PersistentVolumeClaim":
		return into(o.pvcs, name, strict)
	case "v1/ServiceAccount":
		return into(o.accounts, name, strict)
	case "policy/v1/PodDisruptionBudget":
		return into(o.pdbs, name, strict)
	case "networking.k8s.io/v1/Ingress":
		return into(o.ingresses, name, strict)
	case "networking.k8s.io/v1/NetworkPolicy":
		return into(o.policies, name, strict)
	case "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule":
		v := map[string]any{}
		o.monitoring[meta.Kind+"/"+name] = v
		return json.Unmarshal(js, &v)
	}
	return fmt.Errorf("unexpected kind %s %s", meta.APIVersion, meta.Kind)
}

// into decodes a document with strict into a new T, kept in m under name.
func into[T any](m map[string]*T, name string, strict func(any) error) error {
	v := new(T)
	m[name] = v
	return strict(v)
}

func mustRender(t *testing.T, values string) *objects {
	t.Helper()
	o, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// envOf returns a container's plain environment (no valueFrom).
func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			m[e.Name] = e.Value
		}
	}
	return m
}

func mountsOf(c corev1.Container) map[string]corev1.VolumeMount {
	m := map[string]corev1.VolumeMount{}
	for _, v := range c.VolumeMounts {
		m[v.MountPath] = v
	}
	return m
}

func volumeOf(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

func execProbe(p *corev1.Probe) string {
	if p == nil || p.Exec == nil {
		return ""
	}
	return strings.Join(p.Exec.Command, " ")
}

// The agent DaemonSet with the default values: what the agent needs of the
// node, and a configuration the agent's own loader reads back as meant.
func TestAgentDaemonSet(t *testing.T) {
	o := mustRender(t, "")
	ds := o.daemonSets["strata-agent"]
	if ds == nil {
		t.Fatalf("no agent DaemonSet; have %v", keys(o.daemonSets))
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID {
		t.Error("hostPID is false: the agent would not see executors' /proc")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the agent gets an API token it does not need")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("no capabilities")
	}
	for _, cap := range []corev1.Capability{"SYS_ADMIN", "SYS_PTRACE", "BPF", "PERFMON", "DAC_READ_SEARCH"} {
		if !slices.Contains(sc.Capabilities.Add, cap) {
			t.Errorf("capability %s not added: %v", cap, sc.Capabilities.Add)
		}
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") || sc.Privileged == nil || *sc.Privileged {
		t.Errorf("capabilities drop %v, privileged %v: want drop ALL, not privileged", sc.Capabilities.Drop, sc.Privileged)
	}
	mounts := mountsOf(c)
	for _, m := range []struct {
		path, host string
		readOnly   bool
	}{
		{"/run/strata", "/run/strata", false},                     // hook socket
		{"/opt/strata/jvmhook", "/opt/strata/jvmhook", false},     // hook files the agent installs
		{"/var/lib/strata/spool", "/var/lib/strata/spool", false}, // spool
		{"/sys/kernel/btf", "/sys/kernel/btf", true},              // BTF
	} {
		vm, ok := mounts[m.path]
		if !ok {
			t.Errorf("%s not mounted", m.path)
			continue
		}
		v := volumeOf(spec, vm.Name)
		if v == nil || v.HostPath == nil || v.HostPath.Path != m.host || vm.ReadOnly != m.readOnly {
			t.Errorf("%s: volume %+v, readOnly %v; want host path %s, readOnly %v", m.path, v, vm.ReadOnly, m.host, m.readOnly)
		}
	}
	for _, m := range []string{"/etc/strata/tls", "/etc/strata/tokens"} {
		if vm, ok := mounts[m]; !ok || !vm.ReadOnly || volumeOf(spec, vm.Name).Secret == nil {
			t.Errorf("%s: %+v; want a read-only secret", m, vm)
		}
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if execProbe(p) != "/usr/bin/strata-agent probe" {
			t.Errorf("%s probe %+v, want exec strata-agent probe", name, p)
		}
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("resources %+v: want cpu and memory requests and a memory limit", c.Resources)
	}
	if len(spec.Tolerations) == 0 || spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v: want every node", spec.Tolerations)
	}
	ch, err := loader.Load("strata")
	if err != nil {
		t.Fatal(err)
	}
	// The chart's appVersion: "dev" between releases, "vX.Y.Z" at one.
	if want := "strata/agent:" + ch.Metadata.AppVersion; c.Image != want {
		t.Errorf("image %q, want %q", c.Image, want)
	}

	// The variables mean to the agent what the chart means by them, and
	// the agent reads every one of them.
	env := envOf(c)
	for k := range env {
		if !slices.Contains(config.Variables(), k) {
			t.Errorf("the chart sets %s, which the agent does not read", k)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(flag.NewFlagSet("strata-agent", flag.ContinueOnError), nil, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NodeName = "node-1" // the downward API's
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the agent refuses the chart's settings: %v", err)
	}
	got := []any{cfg.Collector, cfg.Hook.Path, cfg.HookInstallDir, cfg.SpoolDir, cfg.HTTPAddr, cfg.TLSCA, cfg.TLSCert, cfg.TLSKey,
		cfg.TLSServerName, cfg.HTTPTokenFile, cfg.Hook.Mode, cfg.Faults, cfg.SpoolMaxBytes}
	want := []any{"strata-collector.strata.svc:7070", "/run/strata/hook.sock", "/opt/strata/jvmhook", "/var/lib/strata/spool", "0.0.0.0:9464",
		"/etc/strata/tls/ca.crt", "/etc/strata/tls/tls.crt", "/etc/strata/tls/tls.key", "strata-collector.strata.svc",
		"/etc/strata/tokens/tokens", os.FileMode(0o666), "auto", int64(1 << 30)}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("agent setting %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// The collector with its embedded store: one replica, Recreate, its store
// on a kept claim, probes through its own binary, nonroot, and settings
// the collector's loader accepts as they are.
func TestCollectorDuckDB(t *testing.T) {
	o := mustRender(t, "")
	d := o.deployments["strata-collector"]
	if d == nil {
		t.Fatalf("no collector Deployment; have %v", keys(o.deployments))
	}
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d, strategy %s", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if execProbe(p) != "/usr/bin/strata-collector probe" {
			t.Errorf("%s probe %+v, want exec strata-collector probe", name, p)
		}
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 {
		t.Errorf("pod security %+v: want nonroot 65532", psc)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("collector root file system is writable")
	}
	store := volumeOf(spec, "store")
	pvc := o.pvcs["strata-collector-store"]
	if store == nil || store.PersistentVolumeClaim == nil || store.PersistentVolumeClaim.ClaimName != "strata-collector-store" || pvc == nil {
		t.Fatalf("store volume %+v, claim %v", store, pvc)
	}
	if pvc.Annotations["helm.sh/resource-policy"] != "keep" || pvc.Spec.Resources.Requests.Storage().String() != "50Gi" {
		t.Errorf("claim %+v", pvc.ObjectMeta.Annotations)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("no memory limit")
	}
	svc := o.services["strata-collector"]
	if svc == nil || len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Port != 7070 || svc.Spec.Ports[1].Port != 9090 {
		t.Fatalf("service %+v", svc)
	}
	cfg := loadCollector(t, c)
	if cfg.TLSCert != "/etc/strata/tls/tls.crt" || cfg.TLSClientCA != "/etc/strata/tls/ca.crt" || cfg.TokenFile != "/etc/strata/tokens/tokens" ||
		cfg.HTTP != "0.0.0.0:9090" || cfg.Listen != "0.0.0.0:7070" || cfg.StoreDir != "/var/lib/strata/collector" || cfg.Insecure {
		t.Errorf("collector config from the chart: %+v", cfg)
	}
	mounts := mountsOf(c)
	if mounts["/var/lib/strata/collector"].Name != "store" || mounts["/tmp"].Name != "tmp" {
		t.Errorf("mounts %v", mounts)
	}
}

// loadCollector reads the container's environment with the collector's
// own loader: every variable must name a setting, and the result validate.
func loadCollector(t *testing.T, c corev1.Container) server.Config {
	t.Helper()
	env := envOf(c)
	cfg, err := server.Load(nil, func(k string) string { return env[k] }, os.Stderr)
	if err != nil {
		t.Fatalf("the collector refuses the chart's settings: %v (%v)", err, env)
	}
	return cfg
}

// The collector on ClickHouse: stateless replicas, rolling updates, the
// password from a Secret, no claim.
func TestCollectorClickHouse(t *testing.T) {
	o := mustRender(t, `
collector:
  store: clickhouse
  replicas: 3
  clickhouse:
    url: https://ch.example:8443
    passwordSecret: {name: ch-password, key: pw}
    cluster: strata_cluster
  history: [http://jhs:19888, http://shs:18080]
`)
	d := o.deployments["strata-collector"]
	if *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || len(o.pvcs) != 0 {
		t.Errorf("replicas %d, strategy %s, claims %v", *d.Spec.Replicas, d.Spec.Strategy.Type, keys(o.pvcs))
	}
	c := d.Spec.Template.Spec.Containers[0]
	env := envOf(c)
	for k, v := range map[string]string{"STRATA_COLLECTOR_STORE": "clickhouse", "STRATA_COLLECTOR_CLICKHOUSE_URL": "https://ch.example:8443",
		"STRATA_COLLECTOR_CLICKHOUSE_CLUSTER": "strata_cluster", "STRATA_COLLECTOR_CLICKHOUSE_DATABASE": "strata",
		"STRATA_COLLECTOR_HISTORY": "http://jhs:19888,http://shs:18080"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	var pw *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "STRATA_COLLECTOR_CLICKHOUSE_PASSWORD" {
			pw = &c.Env[i]
		}
	}
	if pw == nil || pw.ValueFrom == nil || pw.ValueFrom.SecretKeyRef == nil || pw.ValueFrom.SecretKeyRef.Name != "ch-password" || pw.ValueFrom.SecretKeyRef.Key != "pw" {
		t.Errorf("password %+v, want from the Secret", pw)
	}
	if _, ok := env["STRATA_COLLECTOR_STORE_DIR"]; ok {
		t.Error("store dir set for ClickHouse")
	}
	if cfg := loadCollector(t, c); len(cfg.History) != 2 {
		t.Errorf("history %v", cfg.History)
	}
}

// Combinations that cannot work fail to render, saying why.
func TestChartRefuses(t *testing.T) {
	for _, tc := range []struct{ values, says string }{
		{"tls: {enabled: false}", "needs insecure=true"},
		{"tokens: {secret: ''}", "tokens.secret is empty"},
		{"collector: {replicas: 2}", "one replica"},
		{"collector: {store: mysql}", "value must be one of 'duckdb', 'clickhouse'"},
	} {
		if _, err := render(t, tc.values); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v; want an error saying %q", tc.values, err, tc.says)
		}
	}
	o := mustRender(t, "insecure: true\ntls: {enabled: false}\ntokens: {secret: ''}")
	c := o.deployments["strata-collector"].Spec.Template.Spec.Containers[0]
	if cfg := loadCollector(t, c); !cfg.Insecure || cfg.TLSCert != "" {
		t.Errorf("insecure collector %+v", cfg.Ops)
	}
	if !strings.Contains(o.notes, "WARNING: insecure=true") {
		t.Errorf("NOTES do not warn:\n%s", o.notes)
	}
}

// The Spark settings are what `strata hook-opts` prints for the agent's
// host paths, so executors load the files the agent installs and reach its
// socket.
func TestSparkSettings(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"strata-hook.jar", "libstratahook.so"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	o := mustRender(t, fmt.Sprintf("agent: {hookFilesDir: %s, hookDir: /run/strata-test}\nspark: {driver: true}", dir))
	cm := o.configMaps["strata-spark"]
	if cm == nil {
		t.Fatalf("no spark ConfigMap; have %v", keys(o.configMaps))
	}
	conf := cm.Data["spark-defaults.conf"]
	for _, want := range []string{
		"spark.executor.defaultJavaOptions " + cm.Data["hook-opts"],
		"spark.driver.defaultJavaOptions " + cm.Data["hook-opts"],
		"spark.kubernetes.executor.volumes.hostPath.strata-socket.options.path /run/strata-test",
		"spark.kubernetes.executor.volumes.hostPath.strata-hook.options.path " + dir,
	} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("spark-defaults.conf lacks %q:\n%s", want, conf)
		}
	}
	// Every host directory goes into executors read-only, at its host path
	// (deploy/spark's TestSocketThroughReadOnlyMount: a JVM connects to
	// the socket through such a mount).
	props := map[string]string{}
	for l := range strings.SplitSeq(conf, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			props[k] = v
		}
	}
	volumes := 0
	for k, host := range props {
		name, hostPath := strings.CutPrefix(k, "spark.kubernetes.executor.volumes.hostPath.")
		name, option := strings.CutSuffix(name, ".options.path")
		if !hostPath || !option {
			continue
		}
		volumes++
		prefix := "spark.kubernetes.executor.volumes.hostPath." + name + ".mount."
		if props[prefix+"path"] != host || props[prefix+"readOnly"] != "true" {
			t.Errorf("volume %s of %s: mounted at %q, readOnly %q; want %s, true", name, host, props[prefix+"path"], props[prefix+"readOnly"], host)
		}
	}
	if volumes != 2 {
		t.Errorf("%d host-path volumes, want the socket's and the hook files':\n%s", volumes, conf)
	}
	if !strings.Contains(o.notes, cm.Data["hook-opts"]) {
		t.Errorf("NOTES lack the options:\n%s", o.notes)
	}
	strata := testenv.Built(t, "strata")
	out, err := exec.Command(strata, "hook-opts", "--install-hook", dir, "--hook-socket", "/run/strata-test/hook.sock").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != cm.Data["hook-opts"] {
		t.Errorf("chart's options\n%s\nstrata hook-opts prints\n%s", cm.Data["hook-opts"], got)
	}
}

// deploy/kubernetes/strata.yaml is the chart with its defaults.
func TestManifestsRendered(t *testing.T) {
	o := mustRender(t, "")
	const path = "../kubernetes/strata.yaml"
	head := "# Generated from deploy/helm/strata with its default values (release and\n" +
		"# namespace \"strata\"): go test ./deploy/helm -update. Edit the chart, not this.\n" +
		"# It expects the Secrets strata-collector-tls, strata-agent-tls and\n" +
		"# strata-tokens (README \"Deployment\") and the namespace strata.\n"
	want := head + o.text
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from the chart rendered with its defaults: run go test ./deploy/helm -update", path)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
