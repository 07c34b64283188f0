package spark

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psa "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// chartSpark reads the strata-spark ConfigMap of the rendered chart: its
// hook options and the host paths its spark-defaults mount.
func chartSpark(t *testing.T) (hookOpts string, hostPaths map[string]string) {
	t.Helper()
	raw, err := os.ReadFile("../kubernetes/strata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal(doc, &cm); err != nil || cm.Kind != "ConfigMap" || cm.Name != "strata-spark" {
			continue
		}
		hostPaths = map[string]string{}
		for _, line := range strings.Split(cm.Data["spark-defaults.conf"], "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
			if name, ok := strings.CutPrefix(k, "spark.kubernetes.executor.volumes.hostPath."); ok && strings.HasSuffix(name, ".options.path") {
				hostPaths[strings.TrimSuffix(name, ".options.path")] = v
			}
		}
		return cm.Data["hook-opts"], hostPaths
	}
	t.Fatal("no strata-spark ConfigMap in deploy/kubernetes/strata.yaml")
	return "", nil
}

func podTemplate(t *testing.T) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile("executor-pod-template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(raw, &pod); err != nil {
		t.Fatalf("executor-pod-template.yaml: %v", err)
	}
	return &pod
}

// refused evaluates spec at level and returns the names of the checks
// that refuse it.
func refused(t *testing.T, meta *metav1.ObjectMeta, spec *corev1.PodSpec, level psa.Level) []string {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range ev.EvaluatePod(psa.LevelVersion{Level: level, Version: psa.LatestVersion()}, meta, spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

// TestPodTemplateMountsTheAgentsPaths: the template mounts, read-only, the
// very host directories the chart's agent serves, at the paths its hook
// options name.
func TestPodTemplateMountsTheAgentsPaths(t *testing.T) {
	opts, hostPaths := chartSpark(t)
	pod := podTemplate(t)
	if len(hostPaths) != 2 {
		t.Fatalf("the chart mounts %v; the test expects the socket and hook directories", hostPaths)
	}
	for name, path := range hostPaths {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		if i < 0 || pod.Spec.Volumes[i].HostPath == nil || pod.Spec.Volumes[i].HostPath.Path != path {
			t.Errorf("volume %s: want hostPath %s as the chart's spark-defaults have it", name, path)
			continue
		}
		c := pod.Spec.Containers[0]
		j := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
		if j < 0 || c.VolumeMounts[j].MountPath != path || !c.VolumeMounts[j].ReadOnly {
			t.Errorf("mount of %s: want %s, read-only", name, path)
		}
		if !strings.Contains(opts, path+"/") {
			t.Errorf("the chart's hook options %q name no file under %s", opts, path)
		}
	}
}

// TestPodTemplatePodSecurity: at Baseline and at Restricted, Kubernetes'
// own evaluator refuses the template for its hostPath volumes and for
// nothing else.
func TestPodTemplatePodSecurity(t *testing.T) {
	pod := podTemplate(t)
	for _, level := range []psa.Level{psa.LevelBaseline, psa.LevelRestricted} {
		got := refused(t, &pod.ObjectMeta, &pod.Spec, level)
		if len(got) == 0 {
			t.Errorf("%s: nothing refused; the hostPath volumes should be", level)
		}
		for _, r := range got {
			if !strings.Contains(r, "hostPath") {
				t.Errorf("%s refuses more than the hostPath volumes: %s", level, r)
			}
		}
		t.Logf("%s refuses: %s", level, strings.Join(got, "; "))
	}
	if got := refused(t, &pod.ObjectMeta, &pod.Spec, psa.LevelPrivileged); len(got) != 0 {
		t.Errorf("privileged refuses %v", got)
	}
}

// TestSparkApplication: the operator example carries the chart's hook
// options as defaultJavaOptions and mounts the same host directories
// read-only into its executors, whose security context meets Restricted.
func TestSparkApplication(t *testing.T) {
	opts, hostPaths := chartSpark(t)
	raw, err := os.ReadFile("sparkapplication.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var app struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			SparkConf map[string]string `json:"sparkConf"`
			Volumes   []corev1.Volume   `json:"volumes"`
			Executor  struct {
				SecurityContext *corev1.SecurityContext `json:"securityContext"`
				VolumeMounts    []corev1.VolumeMount    `json:"volumeMounts"`
			} `json:"executor"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &app); err != nil {
		t.Fatal(err)
	}
	if app.APIVersion != "sparkoperator.k8s.io/v1beta2" || app.Kind != "SparkApplication" {
		t.Fatalf("%s %s", app.APIVersion, app.Kind)
	}
	if got := app.Spec.SparkConf["spark.executor.defaultJavaOptions"]; got != opts {
		t.Errorf("defaultJavaOptions %q, want the chart's %q", got, opts)
	}
	for name, path := range hostPaths {
		i := slices.IndexFunc(app.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		j := slices.IndexFunc(app.Spec.Executor.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
		if i < 0 || app.Spec.Volumes[i].HostPath == nil || app.Spec.Volumes[i].HostPath.Path != path ||
			j < 0 || app.Spec.Executor.VolumeMounts[j].MountPath != path || !app.Spec.Executor.VolumeMounts[j].ReadOnly {
			t.Errorf("volume %s: want hostPath %s mounted read-only at the same path", name, path)
		}
	}
	spec := corev1.PodSpec{Volumes: app.Spec.Volumes, Containers: []corev1.Container{{Name: "executor",
		SecurityContext: app.Spec.Executor.SecurityContext, VolumeMounts: app.Spec.Executor.VolumeMounts}}}
	for _, r := range refused(t, &metav1.ObjectMeta{}, &spec, psa.LevelRestricted) {
		if !strings.Contains(r, "hostPath") {
			t.Errorf("restricted refuses the executors for more than hostPath: %s", r)
		}
	}
}
