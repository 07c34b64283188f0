package heuristics

import (
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
)

// Spark Configuration vectors (docs/heuristics.md#test-vectors), attempt
// duration 10 s.
func TestSparkConfigurationVectors(t *testing.T) {
	h := newSparkConfiguration(sparkConfiguration.of(defaults(t)))
	app := func() *job.SparkApp {
		return &job.SparkApp{Attempts: []job.SparkAttempt{{StartMs: 1_000, EndMs: 11_000}}}
	}
	kryo := "org.apache.spark.serializer.KryoSerializer"
	cf1 := map[string]string{
		"spark.serializer": kryo, "spark.driver.memory": "2G", "spark.executor.instances": "900",
		"spark.executor.memory": "1g", "spark.shuffle.service.enabled": "true",
		"spark.dynamicAllocation.enabled": "true", "spark.yarn.secondary.jars": "something without star",
		"spark.yarn.driver.memoryOverhead": "500",
	}
	runVectors(t, h, []vector{
		{"CF-1", sparkJob(cf1, app()), None, 0},
		{"CF-3", sparkJob(map[string]string{}, app()), Moderate, 0},
		{"CF-5", sparkJob(map[string]string{"spark.serializer": "org.apache.spark.serializer.FooSerializer",
			"spark.shuffle.service.enabled": "true"}, app()), Moderate, 0},
		{"CF-7", sparkJob(map[string]string{"spark.shuffle.service.enabled": "true",
			"spark.dynamicAllocation.enabled": "true"}, app()), Moderate, 0},
		{"CF-9", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "false",
			"spark.dynamicAllocation.enabled": "false"}, app()), Moderate, 0},
		{"DA without shuffle service", sparkJob(map[string]string{"spark.serializer": kryo,
			"spark.dynamicAllocation.enabled": "true"}, app()), Severe, 0},
		{"wildcard jars", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.yarn.secondary.jars": "lib/*"}, app()), Critical, 0},
		{"min executors", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.dynamicAllocation.minExecutors": "2"}, app()), Critical, 0},
		{"max executors", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.dynamicAllocation.maxExecutors": "901"}, app()), Critical, 0},
		{"big executors", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.executor.memory": "20g", "spark.executor.cores": "4"}, app()), Severe, 0},
		{"overhead", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.yarn.executor.memoryOverhead": "6144"}, app()), Severe, 0},
		// The names Spark 2.3 and later set (and log) win over the YARN ones.
		{"overhead, current name", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.executor.memoryOverhead": "6g", "spark.yarn.executor.memoryOverhead": "1024"}, app()), Severe, 0},
		{"driver overhead, current name", sparkJob(map[string]string{"spark.serializer": kryo, "spark.shuffle.service.enabled": "true",
			"spark.driver.memoryOverhead": "8192"}, app()), Critical, 0},
	})

	r := h.Apply(sparkJob(cf1, app()))
	if len(r.Details) != 9 {
		t.Fatalf("CF-1: %d details, want 9: %v", len(r.Details), r.Details)
	}
	want := map[string]string{
		"spark.driver.memory": "2 GB", "spark.executor.memory": "1 GB", "spark.executor.instances": "900",
		"spark.executor.cores": notPresented, "spark.dynamicAllocation.enabled": "true",
		"spark.yarn.driver.memoryOverhead": "500 MB",
	}
	for k, v := range want {
		if got, _ := findDetail(r, k); got != v {
			t.Errorf("CF-1 detail %s = %q, want %q", k, got, v)
		}
	}
	if got, _ := findDetail(r, "spark.application.duration"); !strings.Contains(got, "10") {
		t.Errorf("CF-1 duration %q does not contain 10", got)
	}
	for _, d := range r.Details {
		if d.Text != "" {
			t.Errorf("CF-1 (nothing to advise): %s has long text %q", d.Name, d.Text)
		}
	}
}

// Values and advice sit where Dr. Elephant puts them: the serializer and
// shuffle-service lines show the configured value, the advice is their
// long text; the other findings are lines whose value is the advice.
func TestSparkConfigurationDetails(t *testing.T) {
	h := newSparkConfiguration(sparkConfiguration.of(defaults(t)))
	app := &job.SparkApp{Attempts: []job.SparkAttempt{{StartMs: 1_000, EndMs: 11_000}}}
	for _, tc := range []struct {
		name string
		conf map[string]string
		want map[string]Detail // by name; Text "?" = any non-empty long text
	}{
		{"nothing set", map[string]string{}, map[string]Detail{
			"spark.serializer":              {Value: notPresented, Text: "?"},
			"spark.shuffle.service.enabled": {Value: notPresented, Text: "?"},
		}},
		{"java serializer, DA without shuffle service", map[string]string{
			"spark.serializer": "org.apache.spark.serializer.JavaSerializer", "spark.dynamicAllocation.enabled": "true",
			"spark.shuffle.service.enabled": "false",
		}, map[string]Detail{
			"spark.serializer":              {Value: "org.apache.spark.serializer.JavaSerializer", Text: "?"},
			"spark.shuffle.service.enabled": {Value: "false", Text: "?"},
		}},
		{"limits", map[string]string{
			"spark.serializer": "org.apache.spark.serializer.KryoSerializer", "spark.shuffle.service.enabled": "true",
			"spark.dynamicAllocation.minExecutors": "4", "spark.dynamicAllocation.maxExecutors": "1000",
			"spark.yarn.secondary.jars": "lib/*.jar", "spark.yarn.executor.memoryOverhead": "8g",
			"spark.yarn.driver.memoryOverhead": "6144",
		}, map[string]Detail{
			"Minimum Executors":        {Value: "spark.dynamicAllocation.minExecutors is 4; dynamic allocation should start from 1 or fewer executors."},
			"Maximum Executors":        {Value: "spark.dynamicAllocation.maxExecutors is 1000; keep it at 900 or fewer executors."},
			"Jars notation":            {Value: "Name the jars in spark.yarn.secondary.jars one by one instead of with a * wildcard."},
			"Executor Overhead Memory": {Value: "The executors ask for a large memory overhead; lower spark.yarn.executor.memoryOverhead."},
			"Driver Overhead Memory":   {Value: "The driver asks for a large memory overhead; lower spark.yarn.driver.memoryOverhead."},
			// The configured values stay on the properties' own lines.
			"spark.yarn.executor.memoryOverhead": {Value: "8 GB"},
			"spark.yarn.driver.memoryOverhead":   {Value: "6 GB"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Apply(sparkJob(tc.conf, app))
			for name, want := range tc.want {
				got, ok := findLine(r, name)
				if !ok || got.Value != want.Value || (want.Text == "?") != (got.Text != "") {
					t.Errorf("%s = %+v (present %v), want value %q, long text %q", name, got, ok, want.Value, want.Text)
				}
			}
		})
	}
}
