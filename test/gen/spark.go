package gen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
)

// SparkApp describes a synthetic Spark application. Zero fields take the
// defaults noted beside them.
type SparkApp struct {
	AppID string // default application_1700000000000_0001
	Name  string // default "synthetic"
	User  string // default "strata"
	// Executors (besides the driver); default 4.
	Executors int
	// Stages, one job each; default 2.
	Stages int
	// TasksPerStage; default 100.
	TasksPerStage int
	// StartMs is the application start (ms since epoch); default 1700000000000.
	StartMs int64
	// TaskMs is a typical task duration; default 2000 ms.
	TaskMs int64
	// Skew makes the tasks of the last executor run Skew times longer.
	Skew float64
	// GCRatio is JVM GC time / task run time; default 0.02.
	GCRatio float64
	// ExecutorMemory is spark.executor.memory; default "4g".
	ExecutorMemory string
	// FailedTasks is how many tasks of the first stage fail (then succeed
	// on retry).
	FailedTasks int
	// OmitEnd leaves out the application end event (a running app).
	OmitEnd bool
	Seed    uint64
}

func (s *SparkApp) defaults() {
	if s.AppID == "" {
		s.AppID = "application_1700000000000_0001"
	}
	if s.Name == "" {
		s.Name = "synthetic"
	}
	if s.User == "" {
		s.User = "strata"
	}
	if s.Executors == 0 {
		s.Executors = 4
	}
	if s.Stages == 0 {
		s.Stages = 2
	}
	if s.TasksPerStage == 0 {
		s.TasksPerStage = 100
	}
	if s.StartMs == 0 {
		s.StartMs = 1700000000000
	}
	if s.TaskMs == 0 {
		s.TaskMs = 2000
	}
	if s.GCRatio == 0 {
		s.GCRatio = 0.02
	}
	if s.ExecutorMemory == "" {
		s.ExecutorMemory = "4g"
	}
}

// WriteSparkLog writes the application's event log (JSON lines, as Spark's
// EventLoggingListener writes them).
func WriteSparkLog(w io.Writer, s SparkApp) error {
	s.defaults()
	rng := rand.New(rand.NewPCG(s.Seed, 0x5a4c))
	bw := bufio.NewWriterSize(w, 1<<20)
	now := s.StartMs
	fmt.Fprintln(bw, `{"Event":"SparkListenerLogStart","Spark Version":"3.3.0"}`)
	fmt.Fprintf(bw, `{"Event":"SparkListenerBlockManagerAdded","Block Manager ID":{"Executor ID":"driver","Host":"driver.example.com","Port":40000},"Maximum Memory":2147483648,"Timestamp":%d}`+"\n", now)
	fmt.Fprintf(bw, `{"Event":"SparkListenerEnvironmentUpdate","JVM Information":{"Java Version":"11"},"Spark Properties":{"spark.app.id":"%s","spark.app.name":"%s","spark.executor.instances":"%d","spark.executor.memory":"%s","spark.driver.memory":"2g","spark.executor.cores":"2","spark.serializer":"org.apache.spark.serializer.KryoSerializer","spark.shuffle.service.enabled":"true","spark.dynamicAllocation.enabled":"false","spark.yarn.queue":"default"},"Hadoop Properties":{},"System Properties":{},"Classpath Entries":{}}`+"\n",
		s.AppID, s.Name, s.Executors, s.ExecutorMemory)
	fmt.Fprintf(bw, `{"Event":"SparkListenerApplicationStart","App Name":"%s","App ID":"%s","Timestamp":%d,"User":"%s"}`+"\n", s.Name, s.AppID, now, s.User)
	for e := 1; e <= s.Executors; e++ {
		fmt.Fprintf(bw, `{"Event":"SparkListenerExecutorAdded","Timestamp":%d,"Executor ID":"%d","Executor Info":{"Host":"node%03d.example.com","Total Cores":2,"Log Urls":{}}}`+"\n", now+100, e, e)
		fmt.Fprintf(bw, `{"Event":"SparkListenerBlockManagerAdded","Block Manager ID":{"Executor ID":"%d","Host":"node%03d.example.com","Port":%d},"Maximum Memory":2147483648,"Timestamp":%d}`+"\n", e, e, 40000+e, now+100)
	}
	now += 1000
	taskID := 0
	for st := 0; st < s.Stages; st++ {
		fmt.Fprintf(bw, `{"Event":"SparkListenerJobStart","Job ID":%d,"Submission Time":%d,"Stage Infos":[{"Stage ID":%d,"Stage Attempt ID":0,"Stage Name":"stage %d","Number of Tasks":%d,"RDD Info":[],"Parent IDs":[],"Details":"","Accumulables":[]}],"Stage IDs":[%d],"Properties":{}}`+"\n",
			st, now, st, st, s.TasksPerStage, st)
		fmt.Fprintf(bw, `{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":%d,"Stage Attempt ID":0,"Stage Name":"stage %d","Number of Tasks":%d,"Submission Time":%d,"Accumulables":[]},"Properties":{}}`+"\n",
			st, st, s.TasksPerStage, now)
		stageEnd := now
		failed := 0
		for i := 0; i < s.TasksPerStage; i++ {
			attempts := 1
			if st == 0 && failed < s.FailedTasks {
				attempts = 2
				failed++
			}
			for a := 0; a < attempts; a++ {
				exec := 1 + (i % s.Executors)
				dur := int64(float64(s.TaskMs) * (0.9 + 0.2*rng.Float64()))
				if s.Skew > 1 && exec == s.Executors {
					dur = int64(float64(dur) * s.Skew)
				}
				launch := now + int64(i/s.Executors)*10 + int64(a)*dur
				finish := launch + dur
				stageEnd = max(stageEnd, finish)
				reason := `{"Reason":"Success"}`
				if a+1 < attempts {
					reason = `{"Reason":"ExceptionFailure","Class Name":"java.lang.OutOfMemoryError","Description":"Java heap space","Stack Trace":[],"Accumulables":[]}`
				}
				run := dur * 9 / 10
				gc := int64(float64(run) * s.GCRatio)
				fmt.Fprintf(bw, `{"Event":"SparkListenerTaskStart","Stage ID":%d,"Stage Attempt ID":0,"Task Info":{"Task ID":%d,"Index":%d,"Attempt":%d,"Launch Time":%d,"Executor ID":"%d","Host":"node%03d.example.com","Locality":"PROCESS_LOCAL","Speculative":false,"Getting Result Time":0,"Finish Time":0,"Failed":false,"Killed":false,"Accumulables":[]}}`+"\n",
					st, taskID, i, a, launch, exec, exec)
				fmt.Fprintf(bw, `{"Event":"SparkListenerTaskEnd","Stage ID":%d,"Stage Attempt ID":0,"Task Type":"ResultTask","Task End Reason":%s,"Task Info":{"Task ID":%d,"Index":%d,"Attempt":%d,"Launch Time":%d,"Executor ID":"%d","Host":"node%03d.example.com","Locality":"PROCESS_LOCAL","Speculative":false,"Getting Result Time":0,"Finish Time":%d,"Failed":%t,"Killed":false,"Accumulables":[]},"Task Metrics":{"Executor Deserialize Time":5,"Executor Run Time":%d,"Executor CPU Time":%d,"Peak Execution Memory":%d,"Result Size":1000,"JVM GC Time":%d,"Result Serialization Time":0,"Memory Bytes Spilled":0,"Disk Bytes Spilled":0,"Shuffle Read Metrics":{"Remote Blocks Fetched":0,"Local Blocks Fetched":0,"Fetch Wait Time":0,"Remote Bytes Read":%d,"Local Bytes Read":0,"Total Records Read":100},"Shuffle Write Metrics":{"Shuffle Bytes Written":%d,"Shuffle Write Time":1000,"Shuffle Records Written":100},"Input Metrics":{"Bytes Read":%d,"Records Read":1000},"Output Metrics":{"Bytes Written":0,"Records Written":0},"Updated Blocks":[]}}`+"\n",
					st, reason, taskID, i, a, launch, exec, exec, finish, a+1 < attempts, run, run*1000000, 16<<20, gc, 1<<20, 1<<20, 8<<20)
				taskID++
			}
		}
		fmt.Fprintf(bw, `{"Event":"SparkListenerStageCompleted","Stage Info":{"Stage ID":%d,"Stage Attempt ID":0,"Stage Name":"stage %d","Number of Tasks":%d,"Submission Time":%d,"Completion Time":%d,"Accumulables":[]}}`+"\n",
			st, st, s.TasksPerStage, now, stageEnd)
		fmt.Fprintf(bw, `{"Event":"SparkListenerJobEnd","Job ID":%d,"Completion Time":%d,"Job Result":{"Result":"JobSucceeded"}}`+"\n", st, stageEnd)
		now = stageEnd + 100
	}
	if !s.OmitEnd {
		fmt.Fprintf(bw, `{"Event":"SparkListenerApplicationEnd","Timestamp":%d}`+"\n", now+1000)
	}
	return bw.Flush()
}
