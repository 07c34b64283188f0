package hooksrv

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/workload"
)

var update = flag.Bool("update", false, "regenerate testdata/golden from the C encoder")

// The inputs of testdata/cgen/golden.c, as the decoder must return them.
const (
	gPID  = 4242
	gTID  = 4243
	gTime = 1763776800123456789
)

func gHeader(t FrameType, length, seq uint32) Header {
	return Header{Version: ProtoVersion, Type: t, Length: length, Seq: seq, TID: gTID, TimeNs: gTime + uint64(seq)}
}

var goldenFrames = []struct {
	name string
	want Frame
}{
	{"hello", Frame{gHeader(FrameHello, 91, 0), &Hello{
		PID: gPID, PageSize: 4096, MonotonicNs: 987654321012, ByteArrayBase: 16, LongArrayBase: 16,
		RefSize: 4, Walk: WalkOn, AppID: "application_1526555215992_0001", ExecutorID: "7"}}},
	{"register_heap", Frame{gHeader(FrameRegister, 119, 1), &Register{
		BlockID: 1, Vaddr: 0x7f1234560010, Length: 1 << 20, PID: gPID, RDDID: 7, Partition: 3,
		Mode:     stratav1.MemoryMode_MEMORY_MODE_STORAGE,
		Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, Kind: KindRDD, Chunk: 1, Chunks: 2,
		StageID: 4, StageAttempt: 1, TaskAttemptID: 31, Column: -1, SparkBytes: 2 << 20, Name: "rdd_7_3"}}},
	{"register_offheap", Frame{gHeader(FrameRegister, 121, 2), &Register{
		BlockID: 2, Vaddr: 0x7f0000200000, Length: 64 << 20, PID: gPID, RDDID: -1, Partition: -1,
		Mode:     stratav1.MemoryMode_MEMORY_MODE_EXECUTION,
		Location: stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP, Kind: KindTungstenPage, Chunks: 1,
		StageID: 5, StageAttempt: 0, TaskAttemptID: 12, Column: -1, SparkBytes: 64 << 20, Name: "page_12_0"}}},
	{"move", Frame{gHeader(FrameMove, 64, 3), &Move{
		BlockID: 1, Vaddr: 0x7f1234a00010, Length: 1 << 20, PID: gPID, GCEpoch: 3}}},
	{"access_read", Frame{gHeader(FrameAccess, 64, 4), &Access{
		BlockID: 1, Kind: stratav1.AccessKind_ACCESS_KIND_READ}}},
	{"access_write", Frame{gHeader(FrameAccess, 64, 5), &Access{
		BlockID: 2, Offset: 4096, Length: 8192, Kind: stratav1.AccessKind_ACCESS_KIND_WRITE}}},
	{"free", Frame{gHeader(FrameFree, 48, 6), &Free{BlockID: 1, Reason: FreeEvicted}}},
	{"dropped", Frame{gHeader(FrameDropped, 48, 7), &Dropped{Dropped: 5, Sent: 42}}},
	{"hello_max", Frame{gHeader(FrameHello, 570, 8), &Hello{
		PID: gPID, PageSize: 4096, MonotonicNs: 987654321012, ByteArrayBase: 16, LongArrayBase: 16,
		RefSize: 4, Walk: WalkOn, AppID: strings.Repeat("a", StrMax), ExecutorID: strings.Repeat("b", StrMax)}}},
	{"hello_empty", Frame{gHeader(FrameHello, 60, 9), &Hello{
		PID: gPID, PageSize: 4096, MonotonicNs: 987654321012, ByteArrayBase: 16, LongArrayBase: 16,
		RefSize: 4, Walk: WalkOn}}},
	{"register_graph", Frame{gHeader(FrameRegister, 119, 10), &Register{
		BlockID: 3, Vaddr: 0x7f1234800010, Length: 4000, PID: gPID, RDDID: 8, Partition: 0,
		Mode:     stratav1.MemoryMode_MEMORY_MODE_STORAGE,
		Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, Kind: KindRDD, Flags: FlagObjectGraph,
		Chunks: 1, StageID: -1, StageAttempt: -1, TaskAttemptID: -1, Column: -1, SparkBytes: 5 << 20, Name: "rdd_8_0"}}},
	{"register_batch", Frame{gHeader(FrameRegister, 123, 11), &Register{
		BlockID: 4, Vaddr: 0x7f1234900010, Length: 40964, PID: gPID, RDDID: 9, Partition: 1,
		Mode:     stratav1.MemoryMode_MEMORY_MODE_STORAGE,
		Location: stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP, Kind: KindRDD, Flags: FlagCachedBatch,
		Chunk: 2, Chunks: 6, StageID: 2, TaskAttemptID: 17, Column: 2, SparkBytes: 245000,
		Name: "rdd_9_1", Label: "name"}}},
	{"walk", Frame{gHeader(FrameWalk, 152, 12), &WalkPart{BlockID: 3, Part: 1, Parts: 2,
		WalkSummary: WalkSummary{GCEpoch: 12, Seq: 2, State: WalkDone, Objects: 30000, Bytes: 1234560,
			SharedObjects: 40, SharedBytes: 960, OpaqueObjects: 1, TotalExtents: 251},
		Extents: []Extent{{0x7f1235000000, 8192}, {0x7f1235004000, 4096}, {0x7f1236000000, 1 << 20}}}}},
	{"walk_stale", Frame{gHeader(FrameWalk, 104, 13), &WalkPart{BlockID: 3, Parts: 1,
		WalkSummary: WalkSummary{GCEpoch: 13, Seq: 3, State: WalkStale}}}},
	{"gc", Frame{gHeader(FrameGC, 40, 14), &GC{GCEpoch: 13}}},
	{"checked", Frame{gHeader(FrameChecked, 40, 15), &Checked{GCEpoch: 13}}},
	{"walk_batch", Frame{gHeader(FrameWalk, 152, 16), &WalkPart{BlockID: 4, Parts: 1,
		WalkSummary: WalkSummary{GCEpoch: 12, Seq: 1, State: WalkDone, Objects: 3, Bytes: 2*40964 + 10240, TotalExtents: 3},
		Extents:     []Extent{{0x7f1234900010, 40964}, {0x7f1234a00010, 40964}, {0x7f1234b00018, 10240}}}}},
	{"off", Frame{gHeader(FrameOff, 91, 17), &Off{PID: gPID, Reason: OffJavaVersion, Java: 8,
		Detail: "Java 8 is not supported (needs 11 or later)"}}},
	{"off_empty", Frame{gHeader(FrameOff, 48, 18), &Off{PID: gPID, Reason: OffJavaStart}}},
}

func readGolden(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name+".bin"))
	if err != nil {
		tb.Fatalf("read golden frame (regenerate with go test -run TestCEncoderGolden -update): %v", err)
	}
	return b
}

// TestDecodeGolden decodes the committed frames the C encoder wrote.
func TestDecodeGolden(t *testing.T) {
	for _, tc := range goldenFrames {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(readGolden(t, tc.name))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode =\n%+v %+v\nwant\n%+v %+v", got.Header, got.Body, tc.want.Header, tc.want.Body)
			}
		})
	}
}

// TestEncodeMatchesGolden checks the tests' Go encoder against the C one.
func TestEncodeMatchesGolden(t *testing.T) {
	for _, tc := range goldenFrames {
		if got, want := encode(tc.want), readGolden(t, tc.name); !bytes.Equal(got, want) {
			t.Errorf("%s: Go test encoder\n%x\nC encoder\n%x", tc.name, got, want)
		}
	}
}

// buildGen compiles testdata/cgen/golden.c with the hook's encoder.
func buildGen(t *testing.T) string {
	t.Helper()
	return workload.Compile(t, "golden", "agent/hooksrv/testdata/cgen/golden.c")
}

// TestCEncoderGolden runs the C encoder now and compares its frames with the
// committed ones (or rewrites them with -update).
func TestCEncoderGolden(t *testing.T) {
	gen := buildGen(t)
	dir := t.TempDir()
	if *update {
		dir = filepath.Join("testdata", "golden")
	}
	if out, err := exec.Command(gen, "frames", dir).CombinedOutput(); err != nil {
		t.Fatalf("run golden: %v\n%s", err, out)
	}
	if *update {
		t.Logf("rewrote %s", dir)
		return
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(goldenFrames) {
		t.Errorf("C wrote %d frames, the test expects %d", len(files), len(goldenFrames))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".bin")
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := readGolden(t, name); !bytes.Equal(got, want) {
			t.Errorf("%s: C encoder now writes\n%x\ncommitted golden\n%x\n(run with -update if intended)", name, got, want)
		}
	}
}

// TestCEncoderRejects checks that the C encoder refuses what the decoder
// would reject, with the documented errno.
func TestCEncoderRejects(t *testing.T) {
	out, err := exec.Command(buildGen(t), "errors").CombinedOutput()
	if err != nil {
		t.Fatalf("run golden errors: %v\n%s", err, out)
	}
	got := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got[k] = n
	}
	want := map[string]string{
		"hello_small_buffer":   "ENOSPC",
		"hello_long_string":    "ENAMETOOLONG",
		"register_block_zero":  "EINVAL",
		"register_length_zero": "EINVAL",
		"register_empty_name":  "EINVAL",
		"register_long_name":   "ENAMETOOLONG",
		"register_wraps":       "EINVAL",
		"access_bad_kind":      "EINVAL",
		"move_small_buffer":    "ENOSPC",
		"free_block_zero":      "EINVAL",
		"register_kind_zero":   "EINVAL",
		"register_kind_over":   "EINVAL",
		"register_bad_flags":   "EINVAL",
		"register_chunk_out":   "EINVAL",
		"register_no_chunks":   "EINVAL",
		"free_no_reason":       "EINVAL",
		"free_bad_reason":      "EINVAL",

		"register_column_not_batch": "EINVAL",
		"register_label_not_batch":  "EINVAL",
		"register_column_negative":  "EINVAL",
		"walk_no_state":             "EINVAL",
		"walk_bad_state":            "EINVAL",
		"walk_stale_extents":        "EINVAL",
		"walk_part_out":             "EINVAL",
		"walk_not_ascending":        "EINVAL",
		"walk_empty_extent":         "EINVAL",
		"walk_too_many":             "EINVAL",
		"walk_small_buffer":         "ENOSPC",
		"epoch_bad_type":            "EINVAL",
		"off_no_reason":             "EINVAL",
		"off_bad_reason":            "EINVAL",
		"off_long_detail":           "ENAMETOOLONG",
		"off_small_buffer":          "ENOSPC",
	}
	if got["walk_ok"] != 1 {
		t.Errorf("a valid WALK did not encode (walk_ok %d)", got["walk_ok"])
	}
	for k, errno := range want {
		if got[k] != got[errno] || got[errno] >= 0 {
			t.Errorf("%s returned %d, want -%s (%d)", k, got[k], errno, got[errno])
		}
	}
}

// TestCSendDropsWhenFull floods a socket nobody reads: the C sender must
// never block, must count every frame as sent or dropped, must deliver the
// sent ones whole and in order, and must report its drops in DROPPED. A
// connection from strata_conn_open holds more frames than a default socket
// when net.core.wmem_max allows its larger SO_SNDBUF.
func TestCSendDropsWhenFull(t *testing.T) {
	gen := buildGen(t)
	plain := flood(t, gen)
	conn := flood(t, gen, t.TempDir())
	wmemMax, _ := os.ReadFile("/proc/sys/net/core/wmem_max")
	wmemDefault, _ := os.ReadFile("/proc/sys/net/core/wmem_default")
	wmax, _ := strconv.Atoi(strings.TrimSpace(string(wmemMax)))
	wdef, _ := strconv.Atoi(strings.TrimSpace(string(wmemDefault)))
	if wmax > 2*wdef && conn < 2*plain {
		t.Errorf("strata_conn_open socket held %d frames, default socket %d: SO_SNDBUF request not applied (wmem_max %d)", conn, plain, wmax)
	}
}

// flood runs "golden flood" and checks its accounting; it returns how many
// frames fit before the socket was full.
func flood(t *testing.T, gen string, dir ...string) uint64 {
	t.Helper()
	const n = 20000
	out, err := exec.Command(gen, append([]string{"flood", strconv.Itoa(n)}, dir...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("run golden flood: %v\n%s", err, out)
	}
	var sent, dropped, received uint64
	var contiguous int
	var report []byte
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch f := strings.Fields(l); f[0] {
		case "flood":
			for i, p := range []*uint64{&sent, &dropped, &received} {
				if *p, err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
			}
			contiguous, _ = strconv.Atoi(f[4])
		case "report":
			if report, err = hex.DecodeString(f[1]); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
		}
	}
	if sent+dropped != n || dropped == 0 || received != sent || contiguous != 1 {
		t.Fatalf("sent %d dropped %d received %d contiguous %d: want sent+dropped=%d, some drops, all sent received in order",
			sent, dropped, received, contiguous, n)
	}
	f, err := Decode(report)
	if err != nil {
		t.Fatalf("decode DROPPED report: %v", err)
	}
	if d, ok := f.Body.(*Dropped); !ok || d.Dropped != dropped || d.Sent != sent || f.Seq != n {
		t.Errorf("report %+v %+v, want dropped %d sent %d seq %d", f.Header, f.Body, dropped, sent, n)
	}
	t.Logf("%d frames (%v): %d sent before the socket filled, %d dropped", n, dir, sent, dropped)
	return sent
}

// TestCSendConcurrent sends from several threads over one connection, as
// JVM threads will: every frame is counted once, arrives whole, and carries
// a seq no other frame has.
func TestCSendConcurrent(t *testing.T) {
	const threads, each = 4, 5000
	out, err := exec.Command(buildGen(t), "threads", strconv.Itoa(threads), strconv.Itoa(each)).CombinedOutput()
	if err != nil {
		t.Fatalf("run golden threads: %v\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) != 7 || f[0] != "threads" {
		t.Fatalf("output %q", out)
	}
	var v [6]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
	}
	sent, dropped, received, distinct, maxSeq, whole := v[0], v[1], v[2], v[3], v[4], v[5]
	if sent+dropped != threads*each || received != sent || distinct != received || whole != received || maxSeq > threads*each {
		t.Errorf("sent %d dropped %d received %d distinct seqs %d max seq+1 %d whole %d: want every frame counted once, received whole with a unique seq",
			sent, dropped, received, distinct, maxSeq, whole)
	}
}
