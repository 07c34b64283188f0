package hooksrv

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// TestLayout compares what gcc says about strata_hook.h (sizeof, offsetof,
// constant values) with the decoder's constants. Every line the C side
// prints must match an entry here and every entry must be printed.
func TestLayout(t *testing.T) {
	out, err := exec.Command(buildGen(t), "layout").CombinedOutput()
	if err != nil {
		t.Fatalf("run golden layout: %v\n%s", err, out)
	}
	type field struct{ off, size int }
	sizes := map[string]int{
		"strata_hdr": HeaderSize, "strata_hello": helloSize, "strata_register": registerSize,
		"strata_move": moveSize, "strata_access": accessSize, "strata_free": freeSize,
		"strata_dropped": droppedSize, "strata_walk": walkSize, "strata_extent": extentSize,
		"strata_epoch": epochSize, "strata_off": offSize,
	}
	fields := map[string]field{
		"strata_hdr.magic": {offMagic, 4}, "strata_hdr.version": {offVersion, 2},
		"strata_hdr.type": {offType, 2}, "strata_hdr.length": {offLength, 4},
		"strata_hdr.seq": {offSeq, 4}, "strata_hdr.tid": {offTID, 4},
		"strata_hdr.reserved": {offHdrReserved, 4}, "strata_hdr.time_ns": {offTime, 8},

		"strata_hello.pid": {helloPID, 4}, "strata_hello.page_size": {helloPageSize, 4},
		"strata_hello.monotonic_ns":    {helloMonotonic, 8},
		"strata_hello.byte_array_base": {helloByteArrayBase, 2},
		"strata_hello.long_array_base": {helloLongArrayBase, 2},
		"strata_hello.ref_size":        {helloRefSize, 2}, "strata_hello.walk": {helloWalk, 1},
		"strata_hello.reserved":        {helloReserved, 1},
		"strata_hello.app_id_len":      {helloAppIDLen, 2},
		"strata_hello.executor_id_len": {helloExecutorIDLen, 2},

		"strata_register.block_id": {registerBlockID, 8}, "strata_register.vaddr": {registerVaddr, 8},
		"strata_register.length": {registerLength, 8}, "strata_register.pid": {registerPID, 4},
		"strata_register.rdd_id": {registerRDDID, 4}, "strata_register.partition": {registerPartition, 4},
		"strata_register.mode": {registerMode, 1}, "strata_register.location": {registerLocation, 1},
		"strata_register.name_len": {registerNameLen, 2},
		"strata_register.kind":     {registerKind, 1}, "strata_register.flags": {registerFlags, 1},
		"strata_register.label_len": {registerLabelLen, 2}, "strata_register.chunk": {registerChunk, 4},
		"strata_register.chunks": {registerChunks, 4}, "strata_register.stage_id": {registerStageID, 4},
		"strata_register.stage_attempt":   {registerStageAtt, 4},
		"strata_register.column":          {registerColumn, 4},
		"strata_register.task_attempt_id": {registerTaskAtt, 8},
		"strata_register.spark_bytes":     {registerSparkBytes, 8},

		"strata_move.block_id": {moveBlockID, 8}, "strata_move.vaddr": {moveVaddr, 8},
		"strata_move.length": {moveLength, 8}, "strata_move.pid": {movePID, 4},
		"strata_move.gc_epoch": {moveGCEpoch, 4},

		"strata_access.block_id": {accessBlockID, 8}, "strata_access.offset": {accessOffset, 8},
		"strata_access.length": {accessLength, 8}, "strata_access.kind": {accessKind, 1},
		"strata_access.reserved": {accessReserved, 3}, "strata_access.reserved2": {accessReserved2, 4},

		"strata_free.block_id": {freeBlockID, 8}, "strata_free.reason": {freeReason, 1},
		"strata_free.reserved": {freeReserved, 3}, "strata_free.reserved2": {freeReserved2, 4},

		"strata_dropped.dropped": {droppedDropped, 8}, "strata_dropped.sent": {droppedSent, 8},

		"strata_walk.block_id": {walkBlockID, 8}, "strata_walk.gc_epoch": {walkGCEpoch, 4},
		"strata_walk.walk_seq": {walkSeq, 4}, "strata_walk.part": {walkPart, 2},
		"strata_walk.parts": {walkParts, 2}, "strata_walk.count": {walkCount, 2},
		"strata_walk.state": {walkState, 1}, "strata_walk.reserved": {walkReserved, 1},
		"strata_walk.objects": {walkObjects, 8}, "strata_walk.bytes": {walkBytes, 8},
		"strata_walk.shared_objects": {walkSharedObjects, 8}, "strata_walk.shared_bytes": {walkSharedBytes, 8},
		"strata_walk.opaque_objects": {walkOpaqueObjects, 8}, "strata_walk.extents": {walkExtents, 4},
		"strata_walk.reserved2": {walkReserved2, 4},
		"strata_extent.vaddr":   {0, 8}, "strata_extent.length": {8, 8},
		"strata_epoch.gc_epoch": {epochGCEpoch, 4}, "strata_epoch.reserved": {epochReserved, 4},

		"strata_off.pid": {offPID, 4}, "strata_off.reason": {offReason, 1},
		"strata_off.reserved": {offReserved, 1}, "strata_off.detail_len": {offDetailLen, 2},
		"strata_off.java": {offJava, 4}, "strata_off.reserved2": {offReserved2, 4},
	}
	consts := map[string]int64{
		"STRATA_MAGIC": Magic, "STRATA_PROTO_VERSION": ProtoVersion, "STRATA_FRAME_MAX": FrameMax,
		"STRATA_STR_MAX": StrMax, "STRATA_HDR_SIZE": HeaderSize,
		"STRATA_FRAME_HELLO": int64(FrameHello), "STRATA_FRAME_REGISTER": int64(FrameRegister),
		"STRATA_FRAME_MOVE": int64(FrameMove), "STRATA_FRAME_ACCESS": int64(FrameAccess),
		"STRATA_FRAME_FREE": int64(FrameFree), "STRATA_FRAME_DROPPED": int64(FrameDropped),
		"STRATA_FRAME_WALK": int64(FrameWalk), "STRATA_FRAME_GC": int64(FrameGC),
		"STRATA_FRAME_CHECKED":        int64(FrameChecked),
		"STRATA_FRAME_OFF":            int64(FrameOff),
		"STRATA_MODE_UNSPECIFIED":     int64(stratav1.MemoryMode_MEMORY_MODE_UNSPECIFIED),
		"STRATA_MODE_STORAGE":         int64(stratav1.MemoryMode_MEMORY_MODE_STORAGE),
		"STRATA_MODE_EXECUTION":       int64(stratav1.MemoryMode_MEMORY_MODE_EXECUTION),
		"STRATA_LOCATION_UNSPECIFIED": int64(stratav1.MemoryLocation_MEMORY_LOCATION_UNSPECIFIED),
		"STRATA_LOCATION_ON_HEAP":     int64(stratav1.MemoryLocation_MEMORY_LOCATION_ON_HEAP),
		"STRATA_LOCATION_OFF_HEAP":    int64(stratav1.MemoryLocation_MEMORY_LOCATION_OFF_HEAP),
		"STRATA_ACCESS_READ":          int64(stratav1.AccessKind_ACCESS_KIND_READ),
		"STRATA_ACCESS_WRITE":         int64(stratav1.AccessKind_ACCESS_KIND_WRITE),
		"STRATA_KIND_RDD":             int64(KindRDD),
		"STRATA_KIND_BROADCAST":       int64(KindBroadcast),
		"STRATA_KIND_SHUFFLE":         int64(KindShuffle),
		"STRATA_KIND_TASK_RESULT":     int64(KindTaskResult),
		"STRATA_KIND_STREAM":          int64(KindStream),
		"STRATA_KIND_TUNGSTEN_PAGE":   int64(KindTungstenPage),
		"STRATA_KIND_OTHER":           int64(KindOther),
		"STRATA_KIND_MAX":             int64(kindMax),
		"STRATA_BLOCK_OBJECT_GRAPH":   FlagObjectGraph,
		"STRATA_BLOCK_CACHED_BATCH":   FlagCachedBatch,
		"STRATA_BLOCK_FLAGS_ALL":      flagsAll,
		"STRATA_WALK_ON":              int64(WalkOn),
		"STRATA_WALK_OFF":             int64(WalkOff),
		"STRATA_WALK_UNSUPPORTED_GC":  int64(WalkUnsupportedGC),
		"STRATA_WALK_NO_LAYOUT":       int64(WalkNoLayout),
		"STRATA_WALK_MODE_MAX":        int64(walkModeMax),
		"STRATA_WALK_DONE":            int64(WalkDone),
		"STRATA_WALK_CUT":             int64(WalkCut),
		"STRATA_WALK_STALE":           int64(WalkStale),
		"STRATA_WALK_STATE_MAX":       int64(walkStateMax),
		"STRATA_WALK_EXTENTS_MAX":     WalkExtentsMax,
		"STRATA_FREE_REMOVED":         int64(FreeRemoved),
		"STRATA_FREE_EVICTED":         int64(FreeEvicted),
		"STRATA_FREE_PAGE_FREED":      int64(FreePageFreed),
		"STRATA_FREE_TASK_END":        int64(FreeTaskEnd),
		"STRATA_FREE_CLEARED":         int64(FreeCleared),
		"STRATA_FREE_COLLECTED":       int64(FreeCollected),
		"STRATA_FREE_REASON_MAX":      int64(freeReasonMax),
		"STRATA_OFF_JAVA_VERSION":     int64(OffJavaVersion),
		"STRATA_OFF_OPTIONS":          int64(OffOptions),
		"STRATA_OFF_JAR":              int64(OffJar),
		"STRATA_OFF_JVMTI":            int64(OffJVMTI),
		"STRATA_OFF_JAVA_START":       int64(OffJavaStart),
		"STRATA_OFF_REASON_MAX":       int64(offReasonMax),
	}
	strs := map[string]string{"STRATA_DEFAULT_SOCKET": DefaultPath, "STRATA_SOCKET_ENV": "STRATA_HOOK_SOCKET"}
	if int64(modeMax) != consts["STRATA_MODE_EXECUTION"] || int64(locationMax) != consts["STRATA_LOCATION_OFF_HEAP"] {
		t.Errorf("modeMax %d / locationMax %d are not the largest enum values", modeMax, locationMax)
	}

	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		num := func(i int) int64 {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			return n
		}
		switch {
		case f[0] == "size" && len(f) == 3:
			want, ok := sizes[f[1]]
			if !ok || int64(want) != num(2) {
				t.Errorf("sizeof(struct %s) = %s in C, %d (known %v) in Go", f[1], f[2], want, ok)
			}
			seen["size "+f[1]] = true
		case f[0] == "field" && len(f) == 5:
			key := f[1] + "." + f[2]
			want, ok := fields[key]
			if !ok || int64(want.off) != num(3) || int64(want.size) != num(4) {
				t.Errorf("%s: C offset %s size %s, Go %+v (known %v)", key, f[3], f[4], want, ok)
			}
			seen["field "+key] = true
		case f[0] == "const" && len(f) == 3:
			want, ok := consts[f[1]]
			if !ok || want != num(2) {
				t.Errorf("%s = %s in C, %d (known %v) in Go", f[1], f[2], want, ok)
			}
			seen["const "+f[1]] = true
		case f[0] == "string" && len(f) == 3:
			if want, ok := strs[f[1]]; !ok || want != f[2] {
				t.Errorf("%s = %q in C, %q (known %v) in Go", f[1], f[2], want, ok)
			}
			seen["string "+f[1]] = true
		default:
			t.Errorf("unexpected layout line %q", l)
		}
	}
	requirePrinted(t, seen, "size", sizes)
	requirePrinted(t, seen, "field", fields)
	requirePrinted(t, seen, "const", consts)
	requirePrinted(t, seen, "string", strs)
}

// requirePrinted fails for every Go entry the C side did not print.
func requirePrinted[V any](t *testing.T, seen map[string]bool, kind string, m map[string]V) {
	t.Helper()
	for k := range m {
		if !seen[kind+" "+k] {
			t.Errorf("C does not print %s %s", kind, k)
		}
	}
}

// The hook's block kinds and free reasons are the proto's numbers, so the
// annotator converts them without a table.
func TestEnumsMatchProto(t *testing.T) {
	for _, c := range []struct {
		hook  BlockKind
		proto stratav1.BlockKind
	}{
		{KindRDD, stratav1.BlockKind_BLOCK_KIND_RDD}, {KindBroadcast, stratav1.BlockKind_BLOCK_KIND_BROADCAST},
		{KindShuffle, stratav1.BlockKind_BLOCK_KIND_SHUFFLE}, {KindTaskResult, stratav1.BlockKind_BLOCK_KIND_TASK_RESULT},
		{KindStream, stratav1.BlockKind_BLOCK_KIND_STREAM}, {KindTungstenPage, stratav1.BlockKind_BLOCK_KIND_TUNGSTEN_PAGE},
		{KindOther, stratav1.BlockKind_BLOCK_KIND_OTHER},
	} {
		if int32(c.hook) != int32(c.proto) || c.hook.Proto() != c.proto {
			t.Errorf("%v = %d, proto %v = %d", c.hook, c.hook, c.proto, c.proto)
		}
	}
	if int32(kindMax) != int32(len(stratav1.BlockKind_name)-1) {
		t.Errorf("hook has %d block kinds, proto %d", kindMax, len(stratav1.BlockKind_name)-1)
	}
	for _, c := range []struct {
		hook  FreeReason
		proto stratav1.FreeReason
	}{
		{FreeRemoved, stratav1.FreeReason_FREE_REASON_REMOVED}, {FreeEvicted, stratav1.FreeReason_FREE_REASON_EVICTED},
		{FreePageFreed, stratav1.FreeReason_FREE_REASON_PAGE_FREED}, {FreeTaskEnd, stratav1.FreeReason_FREE_REASON_TASK_END},
		{FreeCleared, stratav1.FreeReason_FREE_REASON_CLEARED}, {FreeCollected, stratav1.FreeReason_FREE_REASON_COLLECTED},
	} {
		if int32(c.hook) != int32(c.proto) || c.hook.Proto() != c.proto {
			t.Errorf("%v = %d, proto %v = %d", c.hook, c.hook, c.proto, c.proto)
		}
	}
}
