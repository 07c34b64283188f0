package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
	"github.com/stratatrace/strata/test/chserver"
	"github.com/stratatrace/strata/test/gen"
	"github.com/stratatrace/strata/test/loadgen"
	"github.com/stratatrace/strata/test/testenv"
)

func TestMain(m *testing.M) { os.Exit(chserver.Main(m)) }

// proc is a running strata-collector.
type proc struct {
	addr   string
	cmd    *exec.Cmd
	stderr *testenv.Output
	exited chan error
}

// startCollector runs bin with args (and --listen 127.0.0.1:0) and waits
// for its address; it is killed at cleanup if still running.
func startCollector(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{stderr: &testenv.Output{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--insecure"}, args...)...)
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		t.Fatalf("first line %q, %v (stderr %s)", line, err, p.stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	p.addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return p
}

// push sends batches on one Push stream and returns their acks.
func push(t *testing.T, addr string, batches []*stratav1.Batch) []*stratav1.Ack {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := stratav1.NewIngestServiceClient(cc).Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := stream.Send(b); err != nil {
			t.Fatal(err)
		}
	}
	stream.CloseSend()
	var acks []*stratav1.Ack
	for range batches {
		ack, err := stream.Recv()
		if err != nil {
			t.Fatalf("ack %d: %v", len(acks), err)
		}
		acks = append(acks, ack)
	}
	return acks
}

func samples(from, to uint64) []*stratav1.Batch {
	var out []*stratav1.Batch
	for s := from; s <= to; s++ {
		out = append(out, storetest.Sample(s))
	}
	return out
}

// Two real collectors on one ClickHouse, as a cluster runs them: a batch
// replayed through the other collector is acknowledged as a duplicate and
// stored once, the same batches pushed through both at once are stored
// once, agents whose collector is killed -9 fail over to the other and
// replay with nothing lost or doubled, and both collectors polling the
// same job histories analyse each job once.
func TestTwoCollectorsOneClickHouse(t *testing.T) {
	srv := chserver.Shared(t)
	db := srv.Database(t)
	bin := binary(t)
	hist := t.TempDir()
	const jobs = 6
	for i := range jobs {
		if _, err := gen.WriteMRJob(hist, gen.MRJob{JobID: fmt.Sprintf("job_1700000000000_%04d", i+1), Maps: 4, Reduces: 1,
			Seed: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	common := []string{"--store", "clickhouse", "--clickhouse-url", srv.UserURL(), "--clickhouse-database", db,
		"--clickhouse-flush-interval", "20ms", "--history", hist, "--history-interval", "300ms", "--log-level", "info"}
	a := startCollector(t, bin, append(common, "--collector-id", "collector-a")...)
	b := startCollector(t, bin, append(common, "--collector-id", "collector-b")...)

	// A replay through the other collector.
	for _, ack := range push(t, a.addr, samples(1, 10)) {
		if ack.GetDuplicate() || ack.GetRecords() != 3 {
			t.Fatalf("first push to a: ack %v", ack)
		}
	}
	for _, ack := range push(t, b.addr, samples(1, 10)) {
		if !ack.GetDuplicate() || ack.GetRecords() != 3 {
			t.Fatalf("replay through b: ack %v, want a duplicate of 3 records", ack)
		}
	}
	// The same batches through both at once.
	var wg sync.WaitGroup
	for _, addr := range []string{a.addr, b.addr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ack := range push(t, addr, samples(11, 30)) {
				if ack.GetRecords() != 3 {
					t.Errorf("push to %s: ack %v", addr, ack)
				}
			}
		}()
	}
	wg.Wait()
	wantRecords(t, a.addr, storetest.App, 30*3)
	wantRecords(t, b.addr, storetest.App, 30*3)

	// strata report's question through either collector: the report
	// scenario (its own app and boot) stored through a, replayed through
	// b, answered once by each.
	report := reportBatches()
	push(t, a.addr, report)
	for _, ack := range push(t, b.addr, report) {
		if !ack.GetDuplicate() {
			t.Fatalf("report replay through b: ack %v, want a duplicate", ack)
		}
	}
	for _, addr := range []string{a.addr, b.addr} {
		wantReport(t, addr)
	}

	// Each job analysed once, by one of the two.
	deadline := time.Now().Add(60 * time.Second)
	for countJobs(t, b.addr) < jobs {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs stored after 60s\na: %s\nb: %s", countJobs(t, b.addr), jobs, a.stderr, b.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // several more polls, past the claims' settle time
	na, nb := strings.Count(a.stderr.String(), "job analysed"), strings.Count(b.stderr.String(), "job analysed")
	if na+nb != jobs {
		t.Fatalf("jobs analysed %d times by a and %d by b, want %d in all\na: %s\nb: %s", na, nb, jobs, a.stderr, b.stderr)
	}
	if n := rows(t, srv, "SELECT count() FROM "+db+".jobs"); n != jobs {
		t.Fatalf("%d analyses stored, want %d", n, jobs)
	}
	t.Logf("jobs analysed: %d by a, %d by b", na, nb)

	// Agents on both; a is killed -9 while they stream; those on a fail
	// over to b and replay.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var killed sync.Once
	res, err := loadgen.Run(ctx, loadgen.Config{Collectors: []string{a.addr, b.addr}, Agents: 6, BatchesPerAgent: 40,
		RecordsPerBatch: 8, PagesPerRecord: 256, Window: 4,
		Progress: func(tot loadgen.Totals) {
			if tot.Batches > 40 {
				killed.Do(func() { a.cmd.Process.Signal(syscall.SIGKILL) })
			}
		}})
	if err != nil {
		t.Fatalf("loadgen: %v (b: %s)", err, b.stderr)
	}
	killed.Do(func() { t.Fatal("the load ended before a was killed") })
	check, err := loadgen.Verify(ctx, b.addr, res)
	if err != nil {
		t.Fatal(err)
	}
	if !check.OK() {
		t.Fatalf("after a's kill -9 and failover: %s (got %v want %v)", check, check.Got, check.Want)
	}
	t.Logf("failover: %d batches acknowledged (%d as duplicates), %d reconnects; %s", res.Batches, res.Duplicates, res.Reconnects, check)
}

// reportApp is the report scenario's app here, so that it neither holds
// nor duplicates the samples.
const reportApp = "application_1700000000000_0099"

func reportBatches() []*stratav1.Batch {
	out := storetest.ReportBatches()
	for _, b := range out {
		b.BootId = "boot-report"
		for _, r := range b.GetRecords() {
			r.GetBlock().AppId = reportApp
		}
		for _, m := range b.GetProcesses() {
			m.AppId = reportApp
		}
	}
	return out
}

// queryClient is a query service client of the collector at addr, and
// the function that closes its connection.
func queryClient(t *testing.T, addr string) (stratav1.QueryServiceClient, func()) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return stratav1.NewQueryServiceClient(cc), func() { cc.Close() }
}

func wantReport(t *testing.T, addr string) {
	t.Helper()
	q, done := queryClient(t, addr)
	defer done()
	resp, err := q.Report(context.Background(), &stratav1.ReportRequest{AppId: reportApp})
	if err != nil {
		t.Fatal(err)
	}
	want := &stratav1.ReportResponse{Rdds: storetest.ReportRDDs(), Occupation: storetest.ReportOccupation()}
	if !proto.Equal(resp, want) {
		t.Fatalf("report through %s =\n%v\nwant\n%v", addr, resp, want)
	}
}

func wantRecords(t *testing.T, addr, app string, want int) {
	t.Helper()
	q, done := queryClient(t, addr)
	defer done()
	stream, err := q.Records(context.Background(), &stratav1.RecordsRequest{AppId: app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := stream.Recv(); err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if n != want {
		t.Fatalf("%s holds %d records, want %d (every batch once)", addr, n, want)
	}
}

func countJobs(t *testing.T, addr string) int {
	t.Helper()
	q, done := queryClient(t, addr)
	defer done()
	resp, err := q.Jobs(context.Background(), &stratav1.JobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetJobs())
}

func rows(t *testing.T, srv *chserver.Server, q string) int {
	t.Helper()
	out, err := srv.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("%s: %q", q, out)
	}
	return n
}
