package fetcher

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stratatrace/strata/collector/job"
	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/testenv"
)

// avroEncoder writes JSON values (decoded with UseNumber) in Avro's binary
// encoding: the tests' way of turning the Avro-JSON histories Hadoop wrote
// into the binary form of the same events.
type avroEncoder struct{ out bytes.Buffer }

func (e *avroEncoder) long(n int64) {
	e.out.Write(binary.AppendUvarint(nil, uint64(n<<1)^uint64(n>>63)))
}

func (e *avroEncoder) text(s string) {
	e.long(int64(len(s)))
	e.out.WriteString(s)
}

func latin1(s string) string {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

func (e *avroEncoder) value(t *avroType, v any) error {
	if v == nil && t.kind != avroNull && t.kind != avroUnion {
		e.zero(t) // a field the generated histories leave out
		return nil
	}
	switch t.kind {
	case avroNull:
		if v != nil {
			return fmt.Errorf("null: %v", v)
		}
	case avroBoolean:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("boolean: %v", v)
		}
		if b {
			e.out.WriteByte(1)
		} else {
			e.out.WriteByte(0)
		}
	case avroInt, avroLong:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			return fmt.Errorf("%s: %v", t.name, v)
		}
		e.long(i)
	case avroFloat, avroDouble:
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			return fmt.Errorf("%s: %v", t.name, v)
		}
		if t.kind == avroFloat {
			e.out.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f))))
		} else {
			e.out.Write(binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)))
		}
	case avroText, avroBytes, avroFixed:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %v", t.name, v)
		}
		switch t.kind {
		case avroText:
			e.text(s)
		case avroBytes:
			e.text(latin1(s))
		default:
			e.out.WriteString(latin1(s))
		}
	case avroEnum:
		s, _ := v.(string)
		for i, sym := range t.symbols {
			if sym == s {
				e.long(int64(i))
				return nil
			}
		}
		return fmt.Errorf("enum %s: %v", t.name, v)
	case avroRecord:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("record %s: %v", t.name, v)
		}
		for _, f := range t.fields {
			if err := e.value(f.typ, m[f.name]); err != nil {
				return fmt.Errorf("%s.%s: %w", t.name, f.name, err)
			}
		}
	case avroArray:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("array: %v", v)
		}
		if len(items) > 0 {
			e.long(int64(len(items)))
			for _, it := range items {
				if err := e.value(t.items, it); err != nil {
					return err
				}
			}
		}
		e.long(0)
	case avroMap:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("map: %v", v)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 0 {
			e.long(int64(len(keys)))
			for _, k := range keys {
				e.text(k)
				if err := e.value(t.items, m[k]); err != nil {
					return err
				}
			}
		}
		e.long(0)
	case avroUnion:
		return e.union(t, v)
	}
	return nil
}

// zero writes the zero value of t: a union's null branch, else its first.
func (e *avroEncoder) zero(t *avroType) {
	switch t.kind {
	case avroBoolean, avroInt, avroLong, avroText, avroBytes, avroEnum, avroArray, avroMap:
		e.out.WriteByte(0)
	case avroFloat:
		e.out.Write(make([]byte, 4))
	case avroDouble:
		e.out.Write(make([]byte, 8))
	case avroFixed:
		e.out.Write(make([]byte, t.size))
	case avroRecord:
		for _, f := range t.fields {
			e.zero(f.typ)
		}
	case avroUnion:
		for i, b := range t.branches {
			if b.kind == avroNull {
				e.long(int64(i))
				return
			}
		}
		e.long(0)
		e.zero(t.branches[0])
	}
}

func bufioOf(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// union picks the branch an Avro-JSON value names ({"<branch>": value}),
// else, for the bare values old writers emit, the first branch of the
// value's JSON kind.
func (e *avroEncoder) union(t *avroType, v any) error {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, inner := range m {
			for i, b := range t.branches {
				if b.name == name {
					e.long(int64(i))
					return e.value(b, inner)
				}
			}
		}
	}
	for i, b := range t.branches {
		fits := false
		switch v.(type) {
		case nil:
			fits = b.kind == avroNull
		case bool:
			fits = b.kind == avroBoolean
		case json.Number:
			fits = b.kind >= avroInt && b.kind <= avroDouble
		case string:
			fits = b.kind == avroText || b.kind == avroBytes || b.kind == avroEnum || b.kind == avroFixed
		case []any:
			fits = b.kind == avroArray
		case map[string]any:
			fits = b.kind == avroRecord || b.kind == avroMap
		}
		if fits {
			e.long(int64(i))
			return e.value(b, v)
		}
	}
	return fmt.Errorf("union: no branch for %v", v)
}

// toBinaryJhist rewrites an Avro-JSON job history as the binary form of the
// same events, under the schema of its own header.
func toBinaryJhist(t testing.TB, jsonHist []byte) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimRight(string(jsonHist), "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != jhistMagic {
		t.Fatalf("not an Avro-JSON history: %.40q", jsonHist)
	}
	schema, err := compileAvroSchema([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	var e avroEncoder
	e.out.WriteString(jhistBinaryMagic + "\n" + lines[1] + "\n")
	for i, l := range lines[2:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		d := json.NewDecoder(strings.NewReader(l))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("line %d: %v", i+3, err)
		}
		if err := e.value(schema, v); err != nil {
			t.Fatalf("line %d: %v", i+3, err)
		}
	}
	return e.out.Bytes()
}

// sampleJobHistories are the Avro-JSON histories of the samples, Hadoop
// 0.23 to 2.x, each with the schema its writer had.
func sampleJobHistories(t *testing.T) []string {
	data := testenv.Samples(t)
	var files []string
	for _, pattern := range []string{"drelephant/history/*/*/*/*/*/*.jhist", "drelephant/history/done_intermediate/*/*.jhist", "mrhistory/hadoop-hs-test/*.jhist"} {
		m, _ := filepath.Glob(filepath.Join(data, pattern))
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("%d sample job histories: %v", len(files), files)
	}
	return files
}

// Every sample history, rewritten in the binary form, is the same job as
// the Avro-JSON file: every task, attempt, counter and warning.
func TestBinaryJhistEqualsJSON(t *testing.T) {
	for _, path := range sampleJobHistories(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bin := toBinaryJhist(t, text)
			fromJSON, err := parseJhist(bytes.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			fromBin, err := parseJhist(bytes.NewReader(bin))
			if err != nil {
				t.Fatal(err)
			}
			if a, b := jsonOf(fromJSON), jsonOf(fromBin); a != b {
				t.Errorf("binary and JSON forms differ:\n%s\n%s", b, a)
			}
			if len(fromBin.MapTasks)+len(fromBin.ReduceTasks) == 0 {
				t.Errorf("no task read")
			}
		})
	}
}

// hadoopBinaryJhist is a history Hadoop 3.3.6 wrote in the binary form
// (testdata/binary: the test cluster of test/yarn, wordcount over three
// files, mapreduce.jobhistory.jhist.format=binary), with its _conf.xml.
const hadoopBinaryJhist = "testdata/binary"

// What Hadoop's own binary history says, read through Fetch as a file.
func TestBinaryJhistFromHadoop(t *testing.T) {
	path, head := hadoopHistory(t)
	if !bytes.HasPrefix(head, []byte(jhistBinaryMagic+"\n")) {
		t.Fatalf("%s is not a binary history: %.20q", path, head)
	}
	j := fetchOne(t, path)
	if len(j.Warnings) != 0 {
		t.Errorf("warnings %q", j.Warnings)
	}
	if j.Status != job.Succeeded || j.Name != "word count" || len(j.MapTasks) != 3 || len(j.ReduceTasks) != 1 ||
		j.Conf["mapreduce.jobhistory.jhist.format"] != "binary" {
		t.Fatalf("job %s %q: %s, %d maps, %d reduces, format %q", j.ID, j.Name, j.Status, len(j.MapTasks), len(j.ReduceTasks),
			j.Conf["mapreduce.jobhistory.jhist.format"])
	}
	// The job's counters are the sum of its tasks'.
	var records, read int64
	for _, tk := range j.MapTasks {
		if tk.Status != job.Succeeded || tk.AnalyzedAttempt() == nil || tk.AnalyzedAttempt().Splits == nil {
			t.Errorf("map %s: %s, attempt %+v", tk.ID, tk.Status, tk.AnalyzedAttempt())
		}
		records += tk.Counters.Get(job.MapInputRecords)
		read += tk.Counters.Get(job.HDFSBytesRead)
	}
	if records == 0 || records != j.Counters.Get(job.MapInputRecords) || read != j.Counters.Get(job.HDFSBytesRead) {
		t.Errorf("maps read %d records, %d bytes; the job says %d, %d", records, read,
			j.Counters.Get(job.MapInputRecords), j.Counters.Get(job.HDFSBytesRead))
	}
}

// hadoopHistory is the path and the bytes of Hadoop's binary history.
func hadoopHistory(t testing.TB) (string, []byte) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(hadoopBinaryJhist, "*.jhist"))
	if len(m) != 1 {
		t.Fatalf("%s: %d histories", hadoopBinaryJhist, len(m))
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return m[0], b
}

// A binary history cut anywhere is the job as far as it was read, with a
// warning, or no job at all; never a panic.
func TestBinaryJhistCut(t *testing.T) {
	var text bytes.Buffer
	if err := gen.WriteJhist(&text, gen.MRJob{Maps: 3, Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	bin := binarySeed(t, text.Bytes())
	full, err := parseJhist(bytes.NewReader(bin))
	if err != nil || len(full.Warnings) != 0 || len(full.MapTasks) != 3 {
		t.Fatalf("whole history: %v, warnings %q", err, full.Warnings)
	}
	schemaEnd := bytes.IndexByte(bin[len(jhistBinaryMagic)+1:], '\n') + len(jhistBinaryMagic) + 2
	truncated := 0
	for cut := schemaEnd + 1; cut < len(bin); cut++ {
		j, err := parseJhist(bytes.NewReader(bin[:cut]))
		if err != nil {
			if !errors.Is(err, ErrNoJob) {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			continue
		}
		if len(j.Warnings) == 0 {
			t.Fatalf("cut at %d of %d: no warning", cut, len(bin))
		}
		if strings.Contains(strings.Join(j.Warnings, " "), "truncated in event") {
			truncated++
		}
	}
	if truncated == 0 {
		t.Error("no cut was reported as a truncated event")
	}
}

// Damage inside an event ends the read there, with the events before it.
func TestBinaryJhistDamaged(t *testing.T) {
	var text bytes.Buffer
	if err := gen.WriteJhist(&text, gen.MRJob{Maps: 2, Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	bin := binarySeed(t, text.Bytes())
	schemaEnd := bytes.IndexByte(bin[len(jhistBinaryMagic)+1:], '\n') + len(jhistBinaryMagic) + 2
	if j, err := parseJhist(bytes.NewReader(bin)); err != nil || j.ID == "" {
		t.Fatalf("the undamaged history: %v", err)
	}
	// Each damage is in the first event; a whole history follows it.
	for _, c := range []struct {
		name   string
		mutate func([]byte) []byte
		warn   string
	}{
		{"bad enum", func(b []byte) []byte { return append(b[:schemaEnd:schemaEnd], 0x7e) }, "has no symbol"},
		{"negative length", func(b []byte) []byte {
			// JOB_SUBMITTED (0), the JobSubmitted branch, then a jobid of length -1.
			return append(b[:schemaEnd:schemaEnd], 0x00, byte(jobSubmittedBranch(t, b[:schemaEnd])<<1), 0x01)
		}, "negative length"},
		{"long varint", func(b []byte) []byte {
			return append(b[:schemaEnd:schemaEnd], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}, "varint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := append(c.mutate(bin), bin[schemaEnd:]...)
			_, err := parseJhist(bytes.NewReader(in))
			if !errors.Is(err, ErrNoJob) || !strings.Contains(err.Error(), c.warn) {
				t.Errorf("err %v, want ErrNoJob naming %q", err, c.warn)
			}
		})
	}
}

// jobSubmittedBranch is the index of JobSubmitted in the event union of a
// binary history's header.
func jobSubmittedBranch(t *testing.T, header []byte) int {
	t.Helper()
	lines := bytes.SplitN(header, []byte("\n"), 3)
	ev, err := compileAvroSchema(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ev.fields {
		if f.name == "event" {
			for i, b := range f.typ.branches {
				if strings.HasSuffix(b.name, ".JobSubmitted") {
					return i
				}
			}
		}
	}
	t.Fatal("no JobSubmitted branch")
	return 0
}

// binarySeed writes a generated Avro-JSON history in the binary form under
// the schema of Hadoop's own binary history (the generator's header carries
// no real schema).
func binarySeed(t testing.TB, text []byte) []byte {
	t.Helper()
	_, hadoop := hadoopHistory(t)
	schema := bytes.SplitN(hadoop, []byte("\n"), 3)[1]
	lines := bytes.SplitN(text, []byte("\n"), 3)
	lines[1] = schema
	return toBinaryJhist(t, bytes.Join(lines, []byte("\n")))
}

// Avro schemas that cannot describe a history are ErrCorrupt.
func TestAvroSchemaErrors(t *testing.T) {
	for _, s := range []string{
		`{`, `"nothing"`, `[]`, `{"type":"record","name":"A","fields":[{"name":"a","type":"B"}]}`,
		`{"type":"record","name":"A","fields":[{"name":"a","type":{"type":"enum","name":"A","symbols":["x"]}}]}`,
		`{"type":"fixed","name":"F","size":-1}`, `{"type":"enum","name":"E","symbols":[1]}`,
		nested("[", "]", maxNesting+1),
	} {
		if _, err := compileAvroSchema([]byte(s)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%.60s: %v, want ErrCorrupt", s, err)
		}
	}
	// A recursive record refers to itself by name; an array of nulls reads
	// no bytes per item and is refused at the first.
	list, err := compileAvroSchema([]byte(`{"type":"record","name":"L","namespace":"n","fields":[{"name":"next","type":["null","L"]},{"name":"z","type":{"type":"array","items":"null"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a := avroTranscoder{r: bufioOf([]byte{2, 2, 0, 2})}
	if err := a.value(list); !errors.Is(err, errAvroEmpty) {
		t.Errorf("array of nulls: %v (%s)", err, a.out)
	}
	a = avroTranscoder{r: bufioOf([]byte{2, 2, 0, 0, 0, 0})}
	if err := a.value(list); err != nil || string(a.out) != `{"next":{"n.L":{"next":{"n.L":{"next":null,"z":[]}},"z":[]}},"z":[]}` {
		t.Errorf("list: %v %s", err, a.out)
	}
}

func FuzzJhistBinary(f *testing.F) {
	var text bytes.Buffer
	if err := gen.WriteJhist(&text, gen.MRJob{Maps: 2, Reduces: 1, Failed: true}); err != nil {
		f.Fatal(err)
	}
	seed := binarySeed(f, text.Bytes())
	f.Add(seed)
	f.Add(seed[:len(seed)*2/3])
	_, hadoop := hadoopHistory(f)
	f.Add(hadoop)
	f.Add([]byte("Avro-Binary\n" + `{"type":"record","name":"E","fields":[{"name":"type","type":"string"},{"name":"event","type":[{"type":"record","name":"x","fields":[{"name":"jobid","type":"string"},{"name":"m","type":{"type":"map","values":"bytes"}},{"name":"f","type":"float"}]}]}]}` + "\n" +
		"\x1aJOB_SUBMITTED\x00\x0ejob_1_1\x02\x02k\x02\xff\x00\x00\x00\x80\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := parseJhist(bytes.NewReader(b))
		if err == nil && j.ID == "" {
			t.Fatal("job without id")
		}
	})
}
