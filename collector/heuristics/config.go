package heuristics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("invalid heuristics config")

// Common are the switches every heuristic accepts. Each heuristic's
// parameter struct embeds it inline, so in YAML they sit beside the
// heuristic's own keys.
type Common struct {
	// Enabled turns the heuristic on; default true.
	Enabled *bool `yaml:"enabled,omitempty"`
	// ExcludeJobTypes skips the heuristic for jobs of these types
	// (docs/heuristics.md#job-types).
	ExcludeJobTypes []string `yaml:"exclude_jobtypes,omitempty"`
}

func (c Common) common() Common { return c }

func (c Common) enabled() bool { return c.Enabled == nil || *c.Enabled }

// JobTypeRule is one row of job type matching (docs/heuristics.md#job-types).
type JobTypeRule struct {
	Name    string `yaml:"name"`
	Type    string `yaml:"type"`            // mapreduce or spark
	Conf    string `yaml:"conf"`            // configuration key that must be present
	Value   string `yaml:"value,omitempty"` // regular expression the whole value must match
	Default bool   `yaml:"default,omitempty"`

	re *regexp.Regexp
}

// MetricsConfig configures the four job metrics.
type MetricsConfig struct {
	AllocatedMemoryWasteBufferPercentage float64 `yaml:"allocated_memory_waste_buffer_percentage" check:"nonnegative" help:"Spark: share of the used memory added before the rest counts as wasted"`
}

// Settings are the settings every heuristic shares.
type Settings struct {
	HDFSBlockSizeBytes int64         `yaml:"hdfs_block_size_bytes" check:"positive" help:"HDFS block size the skew heuristics scale files_severity by (64 MiB)"`
	JobTypes           []JobTypeRule `yaml:"job_types" help:"tried in order, the default row of a type last; value is a regular expression the whole value must match"`
	Metrics            MetricsConfig `yaml:"metrics"`
}

// defaultSettings are Dr. Elephant's.
func defaultSettings() Settings {
	return Settings{
		HDFSBlockSizeBytes: 64 << 20,
		JobTypes: []JobTypeRule{
			{Name: "Pig", Type: "mapreduce", Conf: "pig.script"},
			{Name: "Hive", Type: "mapreduce", Conf: "hive.mapred.mode"},
			{Name: "OozieLauncher", Type: "mapreduce", Conf: "oozie.launcher.action.main.class"},
			{Name: "Cascading", Type: "mapreduce", Conf: "cascading.app.frameworks"},
			{Name: "Voldemort", Type: "mapreduce", Conf: "mapred.reducer.class", Value: "voldemort.store.readonly.mr.*"},
			{Name: "Kafka", Type: "mapreduce", Conf: "kafka.url"},
			{Name: "HadoopJava", Type: "mapreduce", Conf: "mapred.child.java.opts", Default: true},
			{Name: "Spark", Type: "spark", Conf: "spark.app.id", Default: true},
		},
		Metrics: MetricsConfig{AllocatedMemoryWasteBufferPercentage: 0.5},
	}
}

// Config holds the shared settings and every registered heuristic's
// parameters, keyed by the heuristic's YAML key. Start from DefaultConfig,
// then Merge override files, then Validate (NewEngine validates).
type Config struct {
	Settings
	params map[string]any // key → the heuristic's parameter struct, by value
}

// DefaultConfig returns Dr. Elephant's defaults and Strata's cross-layer
// ones, as each heuristic declares them.
func DefaultConfig() *Config {
	c := &Config{Settings: defaultSettings(), params: map[string]any{}}
	for _, e := range registry {
		c.params[e.key] = e.defaults
	}
	return c
}

// Merge overlays the YAML document r on c: keys present replace values,
// absent keys keep theirs (a list, such as job_types, is replaced whole).
// Unknown keys are an error.
func (c *Config) Merge(r io.Reader) error {
	if err := c.merge(r); err != nil {
		return fmt.Errorf("merge config: %w: %w", ErrConfig, err)
	}
	return nil
}

// merge decodes r into a document struct built from the registry (the
// shared settings inline, then one field per heuristic under its key),
// filled with c's values first: the decoder rejects unknown keys at every
// level and reports them with their line.
func (c *Config) merge(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if err := checkSections(data); err != nil {
		return err
	}
	doc := c.document()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(doc.Addr().Interface()); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	c.Settings = doc.Field(0).Interface().(Settings)
	for i, e := range registry {
		c.params[e.key] = doc.Field(i + 1).Interface()
	}
	return nil
}

// checkSections reports a top-level key that is neither a shared setting
// nor a registered heuristic, with its line (the decoder would name the
// generated document type instead).
func checkSections(data []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return err
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil // empty, or not a mapping: the decoder says so
	}
	top := root.Content[0].Content
	known := map[string]bool{}
	t := reflect.TypeOf(Settings{})
	for i := range t.NumField() {
		known[yamlKey(t.Field(i))] = true
	}
	for i := 0; i+1 < len(top); i += 2 {
		k := top[i]
		if _, ok := lookup(k.Value); !ok && !known[k.Value] {
			return fmt.Errorf("line %d: unknown key %q: not a shared setting or a heuristic (see DefaultsYAML)", k.Line, k.Value)
		}
	}
	return nil
}

// document returns an addressable struct value holding c: field 0 is the
// Settings (inline), field i+1 the parameters of registry[i] under its key.
func (c *Config) document() reflect.Value {
	fields := []reflect.StructField{{Name: "Settings", Type: reflect.TypeOf(Settings{}), Tag: `yaml:",inline"`}}
	for i, e := range registry {
		fields = append(fields, reflect.StructField{
			Name: fmt.Sprintf("H%d", i), Type: reflect.TypeOf(e.defaults), Tag: reflect.StructTag(`yaml:"` + e.key + `"`)})
	}
	doc := reflect.New(reflect.StructOf(fields)).Elem()
	doc.Field(0).Set(reflect.ValueOf(c.Settings))
	for i, e := range registry {
		f := doc.Field(i + 1)
		f.Set(reflect.ValueOf(c.params[e.key]))
		ownSwitch(f)
	}
	return doc
}

// ownSwitch gives the Common of parameters v (addressable) its own
// Enabled bool: the decoder writes through a non-nil pointer, which must
// never be a default's, shared with every other Config.
func ownSwitch(v reflect.Value) {
	if v.Type() != reflect.TypeOf(Common{}) {
		v = v.FieldByName("Common")
	}
	c := v.Addr().Interface().(*Common)
	if c.Enabled != nil {
		on := *c.Enabled
		c.Enabled = &on
	}
}

// LoadConfig returns the defaults overlaid with the file at path (none when
// path is empty), validated.
func LoadConfig(path string) (*Config, error) {
	c := DefaultConfig()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open heuristics config: %w", err)
		}
		defer f.Close()
		if err := c.Merge(f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks every value against its field's check tag (threshold
// order per direction, positive sizes) and the job type rules, and
// compiles the rules' regular expressions.
func (c *Config) Validate() error {
	errs := checkFields("", reflect.ValueOf(c.Settings))
	for _, e := range registry {
		errs = append(errs, checkFields(e.key+".", reflect.ValueOf(c.params[e.key]))...)
	}
	defaults := map[string]int{}
	for i := range c.JobTypes {
		r := &c.JobTypes[i]
		if r.Name == "" || r.Conf == "" || (r.Type != "mapreduce" && r.Type != "spark") {
			errs = append(errs, fmt.Errorf("job_types[%d]: name, conf and type (mapreduce|spark) are required", i))
			continue
		}
		if r.Default {
			defaults[r.Type]++
		}
		pat := r.Value
		if pat == "" {
			pat = ".*"
		}
		re, err := regexp.Compile("^(?:" + pat + ")$")
		if err != nil {
			errs = append(errs, fmt.Errorf("job_types[%d].value: %w", i, err))
			continue
		}
		r.re = re
	}
	for t, n := range defaults {
		if n > 1 {
			errs = append(errs, fmt.Errorf("job_types: %d default rows for %s, want at most 1", n, t))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("validate: %w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// The check tag of a parameter field says what Validate requires of it.
const (
	checkAscending   = "asc"         // Thresholds, bigger is worse: low ≤ moderate ≤ severe ≤ critical
	checkDescending  = "desc"        // Thresholds, smaller is worse: low ≥ moderate ≥ severe ≥ critical
	checkPositive    = "positive"    // a number > 0
	checkNonNegative = "nonnegative" // a number ≥ 0
)

var thresholdsType = reflect.TypeOf(Thresholds{})

// checkFields validates the tagged fields of struct v (nested structs
// included, the embedded Common skipped), naming them prefix + YAML key.
func checkFields(prefix string, v reflect.Value) []error {
	var errs []error
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		name := prefix + yamlKey(f)
		if f.Type.Kind() == reflect.Struct && f.Type != thresholdsType && f.Type != reflect.TypeOf(Common{}) {
			errs = append(errs, checkFields(name+".", fv)...)
			continue
		}
		var err error
		switch f.Tag.Get("check") {
		case checkAscending:
			err = fv.Interface().(Thresholds).CheckAscending()
		case checkDescending:
			err = fv.Interface().(Thresholds).CheckDescending()
		case checkPositive:
			if n := number(fv); n <= 0 {
				err = fmt.Errorf("must be positive, is %v", n)
			}
		case checkNonNegative:
			if n := number(fv); n < 0 {
				err = fmt.Errorf("must not be negative, is %v", n)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return errs
}

// checkTags panics unless every Thresholds field of parameter type t says
// its direction and every check tag is known: a heuristic's declaration
// is checked when it registers, at init.
func checkTags(key string, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("check")
		switch {
		case f.Type == thresholdsType && tag != checkAscending && tag != checkDescending:
			panic(fmt.Sprintf("heuristics: %s.%s: Thresholds need check:\"asc\" or check:\"desc\"", key, yamlKey(f)))
		case f.Type != thresholdsType && (tag == checkAscending || tag == checkDescending):
			panic(fmt.Sprintf("heuristics: %s.%s: check:%q on a non-Thresholds field", key, yamlKey(f), tag))
		case tag != "" && tag != checkAscending && tag != checkDescending && tag != checkPositive && tag != checkNonNegative:
			panic(fmt.Sprintf("heuristics: %s.%s: unknown check %q", key, yamlKey(f), tag))
		case f.Type.Kind() == reflect.Struct && f.Type != thresholdsType && f.Type != reflect.TypeOf(Common{}):
			checkTags(key+"."+yamlKey(f), f.Type)
		}
	}
}

func number(v reflect.Value) float64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return float64(v.Int())
	case reflect.Float64, reflect.Float32:
		return v.Float()
	}
	panic("heuristics: check tag on a non-number " + v.Type().String())
}

// yamlKey is a field's YAML key.
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// DefaultsYAML returns the default configuration as a YAML document, every
// key with a comment saying what it is: the reference an override file is
// written against (`strata analyze -defaults` prints it). It is generated
// from what the heuristics declare, so it cannot drift from them.
func DefaultsYAML() []byte {
	c := DefaultConfig()
	var root yaml.Node
	if err := root.Encode(c.document().Interface()); err != nil {
		panic("heuristics: encode defaults: " + err.Error())
	}
	root.HeadComment = defaultsHeader
	annotate(&root, reflect.TypeOf(Settings{}))
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		e, ok := lookup(k.Value)
		if !ok {
			continue
		}
		k.HeadComment = e.name + " — docs/heuristics.md#" + anchor(e.name)
		if !e.defaultEnabled() {
			k.HeadComment += " (off unless enabled: true)"
		}
		annotate(root.Content[i+1], reflect.TypeOf(e.defaults))
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		panic("heuristics: encode defaults: " + err.Error())
	}
	return b.Bytes()
}

const defaultsHeader = `Strata job heuristics: thresholds and switches (docs/heuristics.md).

These are Dr. Elephant's code defaults and Strata's cross-layer ones.
An override file names only what it changes; every other key keeps the
value below, and an unknown key is an error. A threshold list is
(low, moderate, severe, critical): four numbers or arithmetic
expressions ("1/8"), or one string "1/8, 1/4, 1/2, 1". Units are in
the key names; the comment says whether bigger (ascending) or smaller
(descending) is worse.

Every heuristic also accepts:
  enabled: false              # drop it
  exclude_jobtypes: [Pig]     # skip it for jobs of these types`

// annotate puts each field's help text (and direction) beside its key in
// mapping node n of struct type t, and writes lists of scalars and job
// type rows in flow style.
func annotate(n *yaml.Node, t reflect.Type) {
	if n.Kind != yaml.MappingNode {
		return
	}
	fields := map[string]reflect.StructField{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if strings.Contains(f.Tag.Get("yaml"), ",inline") || (f.Anonymous && f.Type.Kind() == reflect.Struct) {
				collect(f.Type)
				continue
			}
			fields[yamlKey(f)] = f
		}
	}
	collect(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			continue
		}
		if v.Kind == yaml.SequenceNode {
			flowLeaves(v)
		}
		if f.Type.Kind() == reflect.Struct && f.Type != thresholdsType {
			annotate(v, f.Type)
		}
		help := f.Tag.Get("help")
		switch f.Tag.Get("check") {
		case checkAscending:
			help = joinNonEmpty(help, "ascending")
		case checkDescending:
			help = joinNonEmpty(help, "descending")
		}
		if help == "" {
			continue
		}
		if v.Kind == yaml.ScalarNode || v.Style == yaml.FlowStyle {
			v.LineComment = help
		} else {
			k.HeadComment = help
		}
	}
}

// flowLeaves writes a sequence of scalars on one line, and a sequence of
// mappings one flow mapping per line.
func flowLeaves(seq *yaml.Node) {
	scalars := true
	for _, c := range seq.Content {
		if c.Kind == yaml.MappingNode {
			c.Style = yaml.FlowStyle
		}
		scalars = scalars && c.Kind == yaml.ScalarNode
	}
	if scalars {
		seq.Style = yaml.FlowStyle
	}
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}
