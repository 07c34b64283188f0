package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/testenv"
	"github.com/stratatrace/strata/test/workload"
)

// TestIngestSurvivesCancelledPushes is issue 8's wedge with the real
// binaries. While one client pushes big batches and cancels each stream a
// few milliseconds in (mid-store, in a loop), a second node pushes small
// batches and a real agent streams a workload's blocks and is killed with
// SIGKILL mid-stream, then restarted on its spool. Afterwards:
//
//   - every batch of the steady node was acknowledged as new and is stored
//     once (before the fix, the first COMMIT that went through but reported
//     the cancelled context's error made every later batch of every node
//     fail with a duplicate batch_id);
//   - the agent's spool drains, and each of its records is stored exactly
//     once, the records acknowledged before the kill among them;
//   - each cancelled batch is stored whole and once, or not at all, and
//     every one acknowledged before its cancel is stored;
//   - health says SERVING for the server and the ingest service.
func TestIngestSurvivesCancelledPushes(t *testing.T) {
	testenv.RequireRoot(t)
	bin := bins(t)
	wbin := workload.Compile(t, "blocks", "test/e2e/blocks.c")
	_, addr := startCollector(t, bin)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ingest := stratav1.NewIngestServiceClient(cc)
	run := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	begin := time.Now()

	// The canceller: batches of 500 one-page runs (a few milliseconds to
	// store), each on its own stream, cancelled 0-15 ms after it was sent.
	// Batch seq's records carry times seq*1000+i, so the trace tells the
	// batches apart.
	cancelApp := "app-cancel-" + run
	const cancelRecords, cancelRuns = 10, 50
	cancelBatch := func(seq uint64) *stratav1.Batch {
		return &stratav1.Batch{NodeName: "cancel-node", BootId: "boot-" + run, Seq: seq,
			Records: scatteredRecords(cancelApp, int64(seq)*1000, cancelRecords, cancelRuns)}
	}
	stop := make(chan struct{})
	var (
		wg          sync.WaitGroup
		cancelSeq   atomic.Uint64
		cancelAcked sync.Map // seq -> true: acknowledged before the cancel
		steadyAcked uint64
		steadyErr   = make(chan error, 1)
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			seq := cancelSeq.Add(1)
			ctx, cancel := context.WithCancel(context.Background())
			stream, err := ingest.Push(ctx)
			if err == nil && stream.Send(cancelBatch(seq)) == nil {
				time.Sleep(time.Duration(rand.IntN(15000)) * time.Microsecond)
				cancel()
				if ack, err := stream.Recv(); err == nil && ack.GetSeq() == seq {
					cancelAcked.Store(seq, true)
				}
			}
			cancel()
		}
	}()

	// The steady node: one stream, one batch at a time, each must be
	// acknowledged as newly stored.
	steadyApp := "app-steady-" + run
	go func() {
		defer wg.Done()
		stream, err := ingest.Push(context.Background())
		if err != nil {
			steadyErr <- err
			return
		}
		defer stream.CloseSend()
		for seq := uint64(1); ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			b := storetest.Sample(seq)
			b.NodeName, b.BootId = "steady-node", "boot-"+run
			for _, r := range b.Records {
				r.Block.AppId = steadyApp
			}
			b.Workloads = nil
			if err := stream.Send(b); err != nil {
				steadyErr <- fmt.Errorf("send seq %d: %w", seq, err)
				return
			}
			ack, err := stream.Recv()
			if err != nil {
				steadyErr <- fmt.Errorf("batch %d of the steady node: %w", seq, err)
				return
			}
			if ack.GetSeq() != seq || ack.GetDuplicate() {
				steadyErr <- fmt.Errorf("ack of seq %d = %v, want it newly stored", seq, ack)
				return
			}
			steadyAcked = seq
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()

	// The agent: 128 blocks of 1 MiB, registered then read 3 times (512
	// records); killed with SIGKILL as soon as it has
	// sent its first batch — while the collector is storing it, behind the
	// canceller's batches — and restarted on the same spool.
	const agentRecords = 128 * 4
	agentDir := t.TempDir()
	ag := startAgentIn(t, bin, addr, agentDir, "--faults", "off")
	agentApp := "app-agent-" + run
	w := startBlocksT(t, wbin, ag.socket, agentApp, 128, 1, 3)
	io.WriteString(w.in, "go\n")
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if time.Since(start) > time.Minute {
			t.Fatal("the agent sent no batch in a minute")
		}
		if v, _ := ag.metric("strata_stream_batches_sent_total"); v > 0 {
			break
		}
	}
	ackedBeforeKill, _ := ag.metric("strata_stream_records_acked_total")
	ag.cmd.Process.Kill()
	<-ag.done
	t.Logf("%v: agent killed mid-stream, %v of %d records acknowledged", time.Since(begin), ackedBeforeKill, agentRecords)
	ag = startAgentIn(t, bin, addr, agentDir, "--faults", "off")
	waitFor(t, "the restarted agent's spool to drain", 60*time.Second, func() bool {
		select {
		case err := <-steadyErr:
			t.Fatalf("while the agent restarted: %v", err)
		default:
		}
		v, err := ag.metric("strata_spool_pending_batches")
		return err == nil && v == 0
	})

	t.Logf("%v: the restarted agent's spool drained", time.Since(begin))
	// Keep the canceller going for at least 10 s and 200 streams: on the
	// old code it wedged ingest within seconds.
	deadline := time.Now().Add(10 * time.Second)
	wedged := func() error {
		for time.Now().Before(deadline) || cancelSeq.Load() < 200 {
			if time.Since(deadline) > time.Minute {
				return fmt.Errorf("only %d cancelled streams in 70 s", cancelSeq.Load())
			}
			select {
			case err := <-steadyErr:
				return err
			case <-time.After(100 * time.Millisecond):
			}
		}
		return nil
	}()
	close(stop)
	wg.Wait()
	cancelled := cancelSeq.Load()
	if wedged == nil {
		select {
		case wedged = <-steadyErr:
		default:
		}
	}
	if wedged != nil {
		t.Fatalf("after %d cancelled streams: %v", cancelled, wedged)
	}
	acked := 0
	cancelAcked.Range(func(any, any) bool { acked++; return true })
	t.Logf("%v: %d streams cancelled, %d of them after their ack; the steady node stored %d batches",
		time.Since(begin), cancelled, acked, steadyAcked)
	if acked == int(cancelled) {
		t.Fatal("every cancelled stream had its ack: the test did not cancel mid-store")
	}

	ctx := context.Background()
	// Steady node: every acknowledged batch once.
	if got := countPages(t, cc, steadyApp, nil); got != int(steadyAcked)*storetest.SamplePages {
		t.Fatalf("steady node: %d pages stored, want %d (%d batches once)", got, int(steadyAcked)*storetest.SamplePages, steadyAcked)
	}

	// Agent: each record once (a record's pages share its block, access and
	// time), and at least those acknowledged before the kill.
	perRecord := map[string]int{}
	countPages(t, cc, agentApp, func(p *stratav1.TracePage) {
		perRecord[fmt.Sprintf("%s/%v/%d", p.GetBlock().GetBlockId(), p.GetAccess(), p.GetTimeUnixNano())]++
	})
	for rec, n := range perRecord {
		if n != 256 {
			t.Fatalf("agent record %s: %d pages, want 256 (stored once)", rec, n)
		}
	}
	if len(perRecord) < int(ackedBeforeKill) {
		t.Fatalf("agent: %d records stored, fewer than the %v acknowledged before the kill", len(perRecord), ackedBeforeKill)
	}
	t.Logf("%v: agent: %d records stored, each once", time.Since(begin), len(perRecord))

	// Canceller: each batch stored whole or not at all, none twice, and
	// every acknowledged one among them.
	perBatch := map[int64]int{}
	countPages(t, cc, cancelApp, func(p *stratav1.TracePage) { perBatch[p.GetTimeUnixNano()/1000]++ })
	for seq, n := range perBatch {
		if n != cancelRecords*cancelRuns {
			t.Fatalf("cancelled batch %d: %d pages stored, want %d (whole, once)", seq, n, cancelRecords*cancelRuns)
		}
	}
	cancelAcked.Range(func(seq, _ any) bool {
		if perBatch[int64(seq.(uint64))] == 0 {
			t.Errorf("cancelled batch %d was acknowledged but is not stored", seq)
		}
		return true
	})
	t.Logf("%v: %d of the %d cancelled batches stored, each whole and once", time.Since(begin), len(perBatch), cancelled)

	for _, svc := range []string{"", "strata.v1.IngestService"} {
		h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health of %q = %v, %v", svc, h, err)
		}
	}
	w.in.Close()
	w.cmd.Wait()
	ag.stop(t)
}

// scatteredRecords returns n records of app at times t0, t0+1, ..., each
// of runs one-page runs at scattered PFNs (the costliest shape to store
// per page).
func scatteredRecords(app string, t0 int64, n, runs int) []*stratav1.Record {
	const pageSize = 4096
	var recs []*stratav1.Record
	for i := range n {
		base := 0x7f00_0000_0000 + uint64(i)<<24
		r := &stratav1.Record{TimeUnixNano: t0 + int64(i), Access: stratav1.AccessKind_ACCESS_KIND_ALLOC, Pid: 4242,
			PageSize: pageSize, Vaddr: base, Length: uint64(2*runs) * pageSize,
			Block: &stratav1.SparkBlock{AppId: app, ExecutorId: "1", RddId: 1, Partition: int32(i), BlockId: "rdd_1_" + strconv.Itoa(i)}}
		for j := range runs {
			r.Runs = append(r.Runs, &stratav1.PageRun{Vaddr: base + uint64(2*j)*pageSize, Count: 1,
				State: uint32(stratav1.PageState_PAGE_STATE_PRESENT), Pfn: uint64(1000 + 7*(i*runs+j)), NumaNode: 0})
		}
		recs = append(recs, r)
	}
	return recs
}

// countPages streams an app's trace over gRPC, calling each (if set) per
// page, and returns the page count.
func countPages(t *testing.T, cc *grpc.ClientConn, app string, each func(*stratav1.TracePage)) int {
	t.Helper()
	s, err := stratav1.NewQueryServiceClient(cc).Trace(context.Background(), &stratav1.TraceRequest{AppId: app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		p, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("trace %s: %v", app, err)
		}
		if each != nil {
			each(p)
		}
		n++
	}
}

// blocksT is the blocks workload (blocks.c) started for a test.
type blocksT struct {
	cmd *exec.Cmd
	in  io.WriteCloser
}

// startBlocksT starts blocks.c reporting mib MiB as blocks of blockMiB,
// read rounds times after registration, and waits until it has faulted
// its memory in; writing "go\n" to in makes it send.
func startBlocksT(t *testing.T, bin, socket, app string, mib, blockMiB, rounds int) *blocksT {
	t.Helper()
	p := &blocksT{cmd: exec.Command(bin, socket, app, strconv.Itoa(mib), strconv.Itoa(blockMiB), "0", strconv.Itoa(rounds))}
	p.cmd.Stderr = os.Stderr
	p.in, _ = p.cmd.StdinPipe()
	out, _ := p.cmd.StdoutPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.in.Close(); p.cmd.Wait() })
	touched := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["touched"] == true {
				touched <- true
			}
		}
	}()
	select {
	case <-touched:
	case <-time.After(time.Minute):
		t.Fatal("blocks workload did not fault its memory in")
	}
	return p
}
