package gen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// MRJob describes a synthetic MapReduce job. Zero fields take the defaults
// noted beside them.
type MRJob struct {
	// JobID is job_<cluster>_<seq>; default job_1700000000000_0001.
	JobID   string
	User    string // default "strata"
	Name    string // default "synthetic"
	Queue   string // default "default"
	Maps    int    // number of map tasks
	Reduces int    // number of reduce tasks
	// SubmitMs is the submit time (ms since epoch); default 1700000000000.
	SubmitMs int64
	// TaskMs is the typical attempt run time; default 60 000 ms.
	TaskMs int64
	// InputBytes is a typical map's HDFS input; default 64 MiB.
	InputBytes int64
	// Skew makes the last SkewFraction of the maps read Skew times more
	// input and run Skew times longer (Skew ≤ 1: no skew).
	Skew         float64
	SkewFraction float64 // default 0.5 when Skew > 1
	// GCRatio is GC time / CPU time of every task; default 0.005.
	GCRatio float64
	// ContainerMB is mapreduce.{map,reduce}.memory.mb; default 2048.
	ContainerMB int
	// UsedMB is a task's peak physical memory; default 512.
	UsedMB int
	// SpillRatio is spilled / output records of maps; default 1.
	SpillRatio float64
	// Failed makes the job fail on its first map (after 2 failed attempts).
	Failed bool
	// Seed makes the jitter reproducible.
	Seed uint64
}

func (s *MRJob) defaults() {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&s.JobID, "job_1700000000000_0001")
	def(&s.User, "strata")
	def(&s.Name, "synthetic")
	def(&s.Queue, "default")
	if s.SubmitMs == 0 {
		s.SubmitMs = 1700000000000
	}
	if s.TaskMs == 0 {
		s.TaskMs = 60000
	}
	if s.InputBytes == 0 {
		s.InputBytes = 64 << 20
	}
	if s.Skew > 1 && s.SkewFraction == 0 {
		s.SkewFraction = 0.5
	}
	if s.GCRatio == 0 {
		s.GCRatio = 0.005
	}
	if s.ContainerMB == 0 {
		s.ContainerMB = 2048
	}
	if s.UsedMB == 0 {
		s.UsedMB = 512
	}
	if s.SpillRatio == 0 {
		s.SpillRatio = 1
	}
}

// seq returns the job's "<cluster>_<seq>" part.
func (s *MRJob) seq() string { return strings.TrimPrefix(s.JobID, "job_") }

// FinishMs is the job's finish time as WriteJhist writes it.
func (s MRJob) FinishMs() int64 {
	s.defaults()
	return s.SubmitMs + 5000 + 3*s.TaskMs*int64(max(1, int(s.Skew))) + 10000
}

// WriteMRJob writes the job's history and conf into root using Hadoop's done
// layout (root/yyyy/mm/dd/000000/) and returns the .jhist path.
func WriteMRJob(root string, s MRJob) (string, error) {
	s.defaults()
	dir := filepath.Join(root, "2023", "11", "14", "000000")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create history dir: %w", err)
	}
	status := "SUCCEEDED"
	if s.Failed {
		status = "FAILED"
	}
	name := fmt.Sprintf("%s-%d-%s-%s-%d-%d-%d-%s-%s-%d.jhist", s.JobID, s.SubmitMs, s.User, s.Name,
		s.FinishMs(), s.Maps, s.Reduces, status, s.Queue, s.SubmitMs+5000)
	hist := filepath.Join(dir, name)
	if err := writeFile(hist, func(w io.Writer) error { return WriteJhist(w, s) }); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, s.JobID+"_conf.xml")
	if err := writeFile(conf, func(w io.Writer) error { return WriteConf(w, s) }); err != nil {
		return "", err
	}
	return hist, nil
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// WriteConf writes the job's _conf.xml.
func WriteConf(w io.Writer, s MRJob) error {
	s.defaults()
	props := [][2]string{
		{"mapreduce.job.name", s.Name},
		{"mapreduce.job.user.name", s.User},
		{"mapreduce.job.queuename", s.Queue},
		{"mapreduce.map.memory.mb", fmt.Sprint(s.ContainerMB)},
		{"mapreduce.reduce.memory.mb", fmt.Sprint(s.ContainerMB)},
		{"mapreduce.job.reduce.slowstart.completedmaps", "0.05"},
		{"mapred.child.java.opts", "-Xmx1024m"},
		{"map.sort.class", "org.apache.hadoop.util.QuickSort"},
	}
	fmt.Fprint(w, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<configuration>\n")
	for _, p := range props {
		fmt.Fprintf(w, "<property><name>%s</name><value>%s</value><final>false</final><source>job.xml</source></property>\n", p[0], p[1])
	}
	_, err := fmt.Fprint(w, "</configuration>\n")
	return err
}

const jhistSchema = `{"type":"record","name":"Event","namespace":"org.apache.hadoop.mapreduce.jobhistory","fields":[{"name":"type","type":{"type":"enum","name":"EventType","symbols":["JOB_SUBMITTED","JOB_INITED","JOB_FINISHED","TASK_STARTED","TASK_FINISHED","TASK_FAILED","MAP_ATTEMPT_STARTED","MAP_ATTEMPT_FINISHED","MAP_ATTEMPT_FAILED","REDUCE_ATTEMPT_STARTED","REDUCE_ATTEMPT_FINISHED","JOB_FAILED"]}},{"name":"event","type":"bytes"}]}`

const ns = "org.apache.hadoop.mapreduce.jobhistory."

// taskFigures are one task's generated numbers.
type taskFigures struct {
	start, finish, shuffle, sort int64
	input, output, spilled       int64
	cpu, gc, phys, vmem, heap    int64
}

// WriteJhist writes the job's Avro-JSON history.
func WriteJhist(w io.Writer, s MRJob) error {
	s.defaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	bw := bufio.NewWriterSize(w, 1<<20)
	launch := s.SubmitMs + 5000
	fmt.Fprintf(bw, "Avro-Json\n%s\n", jhistSchema)
	fmt.Fprintf(bw, `{"type":"JOB_SUBMITTED","event":{"%sJobSubmitted":{"jobid":"%s","jobName":"%s","userName":"%s","submitTime":%d,"jobConfPath":"hdfs:///staging/%s/job.xml","acls":{},"jobQueueName":"%s","workflowId":{"string":""}}}}`+"\n",
		ns, s.JobID, s.Name, s.User, s.SubmitMs, s.JobID, s.Queue)
	fmt.Fprintf(bw, `{"type":"JOB_INITED","event":{"%sJobInited":{"jobid":"%s","launchTime":%d,"totalMaps":%d,"totalReduces":%d,"jobStatus":"INITED","uberized":false}}}`+"\n",
		ns, s.JobID, launch, s.Maps, s.Reduces)
	var lastMap int64
	var totals taskFigures
	for i := 0; i < s.Maps; i++ {
		f := s.figures(rng, i, launch, false)
		lastMap = max(lastMap, f.finish)
		if s.Failed && i == 0 {
			writeFailedTask(bw, s, i, f)
			break
		}
		writeTask(bw, s, "MAP", i, f)
		totals.add(f)
	}
	if !s.Failed {
		for i := 0; i < s.Reduces; i++ {
			f := s.figures(rng, i, lastMap, true)
			writeTask(bw, s, "REDUCE", i, f)
			totals.add(f)
		}
	}
	if s.Failed {
		fmt.Fprintf(bw, `{"type":"JOB_FAILED","event":{"%sJobUnsuccessfulCompletion":{"jobid":"%s","finishTime":%d,"finishedMaps":0,"finishedReduces":0,"jobStatus":"FAILED","diagnostics":{"string":"Task failed task_%s_m_000000\nJob failed as tasks failed. failedMaps:1 failedReduces:0"}}}}`+"\n",
			ns, s.JobID, s.FinishMs(), s.seq())
	} else {
		fmt.Fprintf(bw, `{"type":"JOB_FINISHED","event":{"%sJobFinished":{"jobid":"%s","finishTime":%d,"finishedMaps":%d,"finishedReduces":%d,"failedMaps":0,"failedReduces":0,"totalCounters":%s}}}`+"\n",
			ns, s.JobID, s.FinishMs(), s.Maps, s.Reduces, counters("TOTAL_COUNTERS", totals, true))
	}
	return bw.Flush()
}

func (t *taskFigures) add(f taskFigures) {
	t.input += f.input
	t.output += f.output
	t.spilled += f.spilled
	t.cpu += f.cpu
	t.gc += f.gc
	t.phys += f.phys
	t.vmem += f.vmem
	t.heap += f.heap
}

func (s *MRJob) figures(rng *rand.Rand, i int, base int64, reduce bool) taskFigures {
	jitter := 0.9 + 0.2*rng.Float64()
	scale := 1.0
	n := s.Maps
	if reduce {
		n = s.Reduces
	}
	if s.Skew > 1 && float64(i) >= float64(n)*(1-s.SkewFraction) {
		scale = s.Skew
	}
	run := int64(float64(s.TaskMs) * scale * jitter)
	f := taskFigures{start: base + int64(i%50)*10, input: int64(float64(s.InputBytes) * scale * jitter)}
	f.finish = f.start + run
	if reduce {
		f.shuffle = f.start + run/3
		f.sort = f.shuffle + run/10
	}
	f.output = f.input / 100
	f.spilled = int64(float64(f.output) * s.SpillRatio)
	f.cpu = run * 8 / 10
	f.gc = int64(float64(f.cpu) * s.GCRatio)
	f.phys = int64(float64(s.UsedMB)*jitter) << 20
	f.vmem = f.phys * 2
	f.heap = f.phys * 3 / 4
	return f
}

// counters renders a JhCounters record.
func counters(name string, f taskFigures, reduce bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":"%s","groups":[{"name":"org.apache.hadoop.mapreduce.FileSystemCounter","displayName":"File System Counters","counts":[`, name)
	fmt.Fprintf(&b, `{"name":"FILE_BYTES_READ","displayName":"FILE: Number of bytes read","value":%d},`, f.output/2)
	fmt.Fprintf(&b, `{"name":"FILE_BYTES_WRITTEN","displayName":"FILE: Number of bytes written","value":%d},`, f.output)
	fmt.Fprintf(&b, `{"name":"HDFS_BYTES_READ","displayName":"HDFS: Number of bytes read","value":%d},`, f.input)
	fmt.Fprintf(&b, `{"name":"HDFS_BYTES_WRITTEN","displayName":"HDFS: Number of bytes written","value":%d}]},`, f.output)
	b.WriteString(`{"name":"org.apache.hadoop.mapreduce.TaskCounter","displayName":"Map-Reduce Framework","counts":[`)
	fmt.Fprintf(&b, `{"name":"MAP_INPUT_RECORDS","displayName":"Map input records","value":%d},`, f.input/100)
	fmt.Fprintf(&b, `{"name":"MAP_OUTPUT_RECORDS","displayName":"Map output records","value":%d},`, f.output/10)
	fmt.Fprintf(&b, `{"name":"SPILLED_RECORDS","displayName":"Spilled Records","value":%d},`, f.spilled/10)
	if reduce {
		fmt.Fprintf(&b, `{"name":"REDUCE_SHUFFLE_BYTES","displayName":"Reduce shuffle bytes","value":%d},`, f.output)
	}
	fmt.Fprintf(&b, `{"name":"GC_TIME_MILLIS","displayName":"GC time elapsed (ms)","value":%d},`, f.gc)
	fmt.Fprintf(&b, `{"name":"CPU_MILLISECONDS","displayName":"CPU time spent (ms)","value":%d},`, f.cpu)
	fmt.Fprintf(&b, `{"name":"PHYSICAL_MEMORY_BYTES","displayName":"Physical memory (bytes) snapshot","value":%d},`, f.phys)
	fmt.Fprintf(&b, `{"name":"VIRTUAL_MEMORY_BYTES","displayName":"Virtual memory (bytes) snapshot","value":%d},`, f.vmem)
	fmt.Fprintf(&b, `{"name":"COMMITTED_HEAP_BYTES","displayName":"Total committed heap usage (bytes)","value":%d}]}]}`, f.heap)
	return b.String()
}

// splits renders the four progress-split series of an attempt.
func splits(f taskFigures) string {
	var clock, cpu, vmem, phys [12]int64
	run := f.finish - f.start
	for i := range 12 {
		clock[i] = run / 12
		cpu[i] = f.cpu / 12
		// Memory grows over the first half, then holds.
		frac := min(float64(i+1)/6, 1)
		vmem[i] = int64(float64(f.vmem>>10) * frac)
		phys[i] = int64(float64(f.phys>>10) * frac)
	}
	return fmt.Sprintf(`"clockSplits":%s,"cpuUsages":%s,"vMemKbytes":%s,"physMemKbytes":%s`,
		ints(clock[:]), ints(cpu[:]), ints(vmem[:]), ints(phys[:]))
}

func ints(xs []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, x)
	}
	b.WriteByte(']')
	return b.String()
}

func writeTask(w io.Writer, s MRJob, typ string, i int, f taskFigures) {
	c := "m"
	if typ == "REDUCE" {
		c = "r"
	}
	task := fmt.Sprintf("task_%s_%s_%06d", s.seq(), c, i)
	att := fmt.Sprintf("attempt_%s_%s_%06d_0", s.seq(), c, i)
	host := fmt.Sprintf("node%03d.example.com", i%100)
	cnt := counters("COUNTERS", f, typ == "REDUCE")
	fmt.Fprintf(w, `{"type":"TASK_STARTED","event":{"%sTaskStarted":{"taskid":"%s","taskType":"%s","startTime":%d,"splitLocations":""}}}`+"\n", ns, task, typ, f.start)
	fmt.Fprintf(w, `{"type":"%s_ATTEMPT_STARTED","event":{"%sTaskAttemptStarted":{"taskid":"%s","taskType":"%s","attemptId":"%s","startTime":%d,"trackerName":"%s","httpPort":8042,"shufflePort":13562,"containerId":"container_%s_01_%06d","locality":{"string":"NODE_LOCAL"}}}}`+"\n",
		typ, ns, task, typ, att, f.start, host, s.seq(), i+2)
	if typ == "MAP" {
		fmt.Fprintf(w, `{"type":"MAP_ATTEMPT_FINISHED","event":{"%sMapAttemptFinished":{"taskid":"%s","attemptId":"%s","taskType":"MAP","taskStatus":"SUCCEEDED","mapFinishTime":%d,"finishTime":%d,"hostname":"%s","port":8041,"rackname":"/default-rack","state":"map","counters":%s,%s}}}`+"\n",
			ns, task, att, f.finish-10, f.finish, host, cnt, splits(f))
	} else {
		fmt.Fprintf(w, `{"type":"REDUCE_ATTEMPT_FINISHED","event":{"%sReduceAttemptFinished":{"taskid":"%s","attemptId":"%s","taskType":"REDUCE","taskStatus":"SUCCEEDED","shuffleFinishTime":%d,"sortFinishTime":%d,"finishTime":%d,"hostname":"%s","port":8041,"rackname":"/default-rack","state":"reduce > reduce","counters":%s,%s}}}`+"\n",
			ns, task, att, f.shuffle, f.sort, f.finish, host, cnt, splits(f))
	}
	fmt.Fprintf(w, `{"type":"TASK_FINISHED","event":{"%sTaskFinished":{"taskid":"%s","taskType":"%s","finishTime":%d,"status":"SUCCEEDED","counters":%s,"successfulAttemptId":{"string":"%s"}}}}`+"\n",
		ns, task, typ, f.finish, cnt, att)
}

func writeFailedTask(w io.Writer, s MRJob, i int, f taskFigures) {
	task := fmt.Sprintf("task_%s_m_%06d", s.seq(), i)
	fmt.Fprintf(w, `{"type":"TASK_STARTED","event":{"%sTaskStarted":{"taskid":"%s","taskType":"MAP","startTime":%d,"splitLocations":""}}}`+"\n", ns, task, f.start)
	var last string
	for a := range 2 {
		att := fmt.Sprintf("attempt_%s_m_%06d_%d", s.seq(), i, a)
		st := f.start + int64(a)*s.TaskMs
		fmt.Fprintf(w, `{"type":"MAP_ATTEMPT_STARTED","event":{"%sTaskAttemptStarted":{"taskid":"%s","taskType":"MAP","attemptId":"%s","startTime":%d,"trackerName":"node000.example.com","httpPort":8042,"shufflePort":13562,"containerId":"container_%s_01_%06d"}}}`+"\n",
			ns, task, att, st, s.seq(), a+2)
		fmt.Fprintf(w, `{"type":"MAP_ATTEMPT_FAILED","event":{"%sTaskAttemptUnsuccessfulCompletion":{"taskid":"%s","taskType":"MAP","attemptId":"%s","finishTime":%d,"hostname":"node000.example.com","port":8041,"rackname":"/default-rack","status":"FAILED","error":"Error: java.lang.OutOfMemoryError: Java heap space\n\tat Synthetic.map(Synthetic.java:%d)\n"}}}`+"\n",
			ns, task, att, st+s.TaskMs/2, 40+a)
		last = att
	}
	fmt.Fprintf(w, `{"type":"TASK_FAILED","event":{"%sTaskFailed":{"taskid":"%s","taskType":"MAP","finishTime":%d,"error":"OutOfMemoryError","failedDueToAttempt":{"string":"%s"},"status":"FAILED","counters":{"name":"COUNTERS","groups":[]}}}}`+"\n",
		ns, task, f.start+2*s.TaskMs, last)
}
