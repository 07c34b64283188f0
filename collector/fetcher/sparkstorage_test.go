package fetcher

import (
	"strconv"
	"strings"
	"testing"
)

// The executor fields a history server derives beyond task sums, replayed
// by its own rules (AppStatusListener, AppStatusStore): storage memory,
// disk and RDD blocks from logged block updates (a removed block reports
// size 0, so it changes no byte count; an unpersisted RDD gives back what
// it held), max tasks from cores and spark.task.cpus, and the driver's
// duration and GC time replaced by the run time and its peak TotalGCTime.
func TestReplayStorageAsServed(t *testing.T) {
	lvl := func(mem, disk bool, repl int) string {
		return `{"Use Disk":` + b(disk) + `,"Use Memory":` + b(mem) + `,"Use Off Heap":false,"Deserialized":false,"Replication":` + strconv.Itoa(repl) + `}`
	}
	upd := func(exec, block, level string, mem, disk int) string {
		return `{"Event":"SparkListenerBlockUpdated","Block Updated Info":{"Block Manager ID":{"Executor ID":"` + exec +
			`","Host":"h","Port":1},"Block ID":"` + block + `","Storage Level":` + level + `,"Memory Size":` + strconv.Itoa(mem) + `,"Disk Size":` + strconv.Itoa(disk) + `}}`
	}
	log := strings.Join([]string{
		`{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}`,
		`{"Event":"SparkListenerEnvironmentUpdate","Spark Properties":{"spark.task.cpus":"2"}}`,
		`{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1000,"User":"u"}`,
		`{"Event":"SparkListenerBlockManagerAdded","Block Manager ID":{"Executor ID":"driver","Host":"h","Port":1},"Maximum Memory":1000,"Timestamp":1001}`,
		`{"Event":"SparkListenerExecutorAdded","Timestamp":1002,"Executor ID":"driver","Executor Info":{"Host":"h","Total Cores":4}}`,
		`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"s","Number of Tasks":2,"RDD Info":[` +
			`{"RDD ID":1,"Storage Level":` + lvl(true, true, 1) + `},{"RDD ID":2,"Storage Level":` + lvl(false, false, 1) + `}]}}`,
		upd("driver", "rdd_1_0", lvl(true, false, 1), 100, 0),
		upd("driver", "rdd_1_1", lvl(true, false, 1), 50, 0),
		upd("driver", "rdd_1_1", lvl(false, true, 1), 50, 20), // dropped to disk: -50 memory, +20 disk
		upd("driver", "rdd_2_0", lvl(true, false, 1), 7, 0),   // RDD 2 not cached: bytes count, blocks do not
		upd("driver", "broadcast_0_piece0", lvl(true, false, 1), 10, 0),
		upd("driver", "broadcast_0_piece0", lvl(false, false, 1), 0, 0), // removed: size 0
		upd("9", "rdd_1_0", lvl(true, false, 1), 999, 0),                // an executor never added
		`{"Event":"SparkListenerTaskEnd","Stage ID":0,"Stage Attempt ID":0,"Task End Reason":{"Reason":"Success"},` +
			`"Task Info":{"Task ID":0,"Index":0,"Attempt":0,"Launch Time":1100,"Executor ID":"driver","Host":"h","Finish Time":1400},` +
			`"Task Executor Metrics":{"JVMHeapMemory":500,"TotalGCTime":7},"Task Metrics":{"JVM GC Time":30,"Executor Run Time":250}}`,
		`{"Event":"SparkListenerApplicationEnd","Timestamp":5000}`,
	}, "\n")
	app, _, err := parseSparkLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(app.Executors) != 1 {
		t.Fatalf("executors %+v: want the driver only (executor 9 was never added)", app.Executors)
	}
	d := app.Executors[0]
	// Memory: 100 + 50 - 50 + 7 + 10 - 0; disk 20; blocks rdd_1_0 and rdd_1_1.
	if d.ID != "driver" || d.MemoryUsed != 117 || d.DiskUsed != 20 || d.RDDBlocks != 2 || d.MaxTasks != 2 ||
		d.TotalDurationMs != 4000 || d.TotalGCTimeMs != 7 || d.PeakMemoryMetrics["JVMHeapMemory"] != 500 {
		t.Errorf("driver before unpersist %+v", *d)
	}
	app, _, err = parseSparkLog(strings.NewReader(strings.Replace(log, `{"Event":"SparkListenerApplicationEnd"`,
		`{"Event":"SparkListenerUnpersistRDD","RDD ID":1}`+"\n"+`{"Event":"SparkListenerApplicationEnd"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// RDD 1 held 100 bytes of memory (50 left for disk) and 20 on disk.
	if d := app.Executors[0]; d.MemoryUsed != 17 || d.DiskUsed != 0 || d.RDDBlocks != 0 {
		t.Errorf("driver after unpersist %+v", *d)
	}
}

func b(v bool) string {
	if v {
		return "true"
	}
	return "false"
}

// A job's description and group come from its properties, as the history
// server takes them (streaming and SQL jobs set the description).
func TestReplayJobProperties(t *testing.T) {
	log := `{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1000,"User":"u"}
{"Event":"SparkListenerJobStart","Job ID":3,"Submission Time":1001,"Stage Infos":[],"Stage IDs":[],"Properties":{"spark.job.description":"Streaming job from <a>","spark.jobGroup.id":"g1","spark.rdd.scope":"{}"}}
{"Event":"SparkListenerJobEnd","Job ID":3,"Completion Time":1002,"Job Result":{"Result":"JobSucceeded"}}
{"Event":"SparkListenerApplicationEnd","Timestamp":5000}`
	app, _, err := parseSparkLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(app.Jobs) != 1 || app.Jobs[0].Description != "Streaming job from <a>" || app.Jobs[0].JobGroup != "g1" {
		t.Fatalf("jobs %+v", app.Jobs)
	}
}
