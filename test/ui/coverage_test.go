package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store/storetest"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// push sends batches to a collector's ingest service, as an agent does,
// and waits for every acknowledgement.
func push(t *testing.T, addr string, batches []*stratav1.Batch) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := stratav1.NewIngestServiceClient(conn).Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := stream.Send(b); err != nil {
			t.Fatalf("push seq %d: %v", b.GetSeq(), err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	acked := 0
	for {
		ack, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("push: %v", err)
		}
		if ack.GetDuplicate() {
			t.Fatalf("batch %d stored before", ack.GetSeq())
		}
		acked++
	}
	if acked != len(batches) {
		t.Fatalf("%d acks for %d batches", acked, len(batches))
	}
}

// TestUICoverage drives the application and RDD pages in Chromium against
// a strata-collector that an agent's batches reached over gRPC: the
// coverage scenario (storetest), whose RDDs are held as serialized
// buffers, a cached DataFrame's column buffers, walked and cut-walked
// objects, and an array of references never walked. The RDD table shows
// each RDD's resolved share and words as the JSON API computes them from
// Spark's bytes, and the RDD pages the share of each block and the
// column of each cached batch's buffer.
func TestUICoverage(t *testing.T) {
	b := newBrowser(t)
	bin := bins(t)
	col := startCollector(t, bin, t.TempDir())
	push(t, col.grpc, storetest.CoverageBatches())
	app := storetest.CoverageApp
	api := col.http + "/api/v1/apps/" + url.PathEscape(app)
	appPage := col.http + "/apps/" + url.PathEscape(app)
	type apiRDD struct {
		RDD           int32    `json:"rdd"`
		SparkBytes    uint64   `json:"spark_bytes"`
		ResolvedBytes uint64   `json:"resolved_bytes"`
		ResolvedShare *float64 `json:"resolved_share"`
		Resolved      string   `json:"resolved"`
	}
	var rows []apiRDD
	if err := getJSON(api+"/rdds", &rows); err != nil || len(rows) != 4 {
		t.Fatalf("rdds %+v, %v", rows, err)
	}

	b.open(t, appPage)
	words := map[int32]string{
		2: "buffers 100 %",
		3: "buffers 93.8 %",
		4: "walked 49.5 % (1 block); walk cut 28.5 % (1 block) (400 B shared with other blocks)",
		5: "references only: walking off",
	}
	shares := map[int32]string{2: "100 %", 3: "93.8 %", 4: "78 %", 5: "0 %"}
	for _, r := range rows {
		cell := func(name string) string {
			got := b.texts(t, fmt.Sprintf(`#rdd-table tr[data-rdd="%d"] td[data-col=%q]`, r.RDD, name))
			if len(got) != 1 {
				t.Fatalf("RDD %d: %d %s cells", r.RDD, len(got), name)
			}
			return got[0]
		}
		if r.ResolvedShare == nil || *r.ResolvedShare != float64(r.ResolvedBytes)/float64(r.SparkBytes) {
			t.Errorf("RDD %d: API share %v of %d / %d", r.RDD, r.ResolvedShare, r.ResolvedBytes, r.SparkBytes)
		}
		if got, want := cell("share"), query.ShareWords(r.ResolvedBytes, r.SparkBytes); got != want || got != shares[r.RDD] {
			t.Errorf("RDD %d share cell %q, API %q, want %q", r.RDD, got, want, shares[r.RDD])
		}
		if got := cell("resolved"); got != words[r.RDD] {
			t.Errorf("RDD %d resolved cell %q, want %q (API %q)", r.RDD, got, words[r.RDD], r.Resolved)
		}
	}
	b.shot(t, "coverage-application")

	b.open(t, appPage+"/rdds/3")
	var columns [][2]string // data-column, text
	b.eval(t, `[...document.querySelectorAll('#block-table tr[data-block="rdd_3_0"] .buffer')].map((d) => [d.dataset.column, d.textContent])`, &columns)
	want := [][2]string{{"0", "column 0 id: buffers, 5.0 KiB in 2 buffers"}, {"1", "column 1 name: buffers, 6.0 KiB in 2 buffers"}}
	if fmt.Sprint(columns) != fmt.Sprint(want) {
		t.Errorf("rdd_3_0's buffers %q, want %q", columns, want)
	}
	b.shot(t, "coverage-rdd-columns")

	b.open(t, appPage+"/rdds/4?at=last") // as last resolved: rdd_4_0's second walk
	for block, want := range map[string]string{"rdd_4_0": "86.6 %", "rdd_4_1": "66.6 %"} {
		got := b.texts(t, fmt.Sprintf(`#block-table tr[data-block=%q] td[data-col="share"]`, block))
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s share %q, want %q", block, got, want)
		}
	}
	b.shot(t, "coverage-rdd-walked")
}
