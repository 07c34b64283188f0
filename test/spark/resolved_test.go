package spark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// checkWalked checks, through the real agent and collector, that the
// deserialized RDD the job caches (MEMORY_ONLY of byte[] records, what
// rdd.cache() stores) resolves to its objects: each block's latest record
// newer than since is WALKED, holds 0.8-1.6 of Spark's memoryUsed, and at
// least 90 % of that record's pages in strata trace hold the partition's
// stamps, read through /proc/PID/mem; and strata report says so per RDD,
// the cached DataFrame's column buffers beside it.
func (c *cluster) checkWalked(t *testing.T, since time.Time) {
	t.Helper()
	r := c.listed(t, cachedRDD{id: c.s.Deser, parts: c.s.Parts})
	rdd := strconv.Itoa(c.s.Deser)
	eventually(t, fmt.Sprintf("RDD %d's walked objects in strata records and trace", c.s.Deser), 30*time.Second, func() error {
		h := c.n.records(t, c.s.App, "--rdd", rdd)
		for _, p := range r.Partitions {
			var last *recordLine
			for i := range h {
				if h[i].BlockID == p.BlockName && h[i].Time.After(since) && h[i].Coverage != nil && h[i].Coverage.Resolution == "walked" {
					last = &h[i]
				}
			}
			if last == nil {
				return fmt.Errorf("block %s: no walked record since %v", p.BlockName, since.Format(time.RFC3339Nano))
			}
			if q := float64(last.Coverage.Bytes) / float64(p.MemoryUsed); q < 0.8 || q > 1.6 {
				return fmt.Errorf("block %s: walked %d bytes, %.2f of Spark's %d", p.BlockName, last.Coverage.Bytes, q, p.MemoryUsed)
			}
			part := partitionOf(t, p.BlockName)
			stamp := []byte(fmt.Sprintf("STRATAr%06dp%06do", c.s.Deser, part))
			var pages, stamped int
			for _, tp := range c.n.trace(t, c.s.App, "--rdd", rdd, "--partition", strconv.Itoa(part)) {
				if tp.BlockID != p.BlockName || !tp.Time.Equal(last.Time) {
					continue
				}
				pages++
				a, err := strconv.ParseUint(tp.VAddr, 0, 64)
				if err != nil {
					return fmt.Errorf("page %q: %v", tp.VAddr, err)
				}
				m, err := readMem(int(tp.PID), a, 4096)
				if err != nil {
					return err
				}
				if bytes.Contains(m, stamp) {
					stamped++
				}
			}
			if pages == 0 || stamped*10 < pages*9 {
				return fmt.Errorf("block %s: %d of the walk's %d pages hold its stamps", p.BlockName, stamped, pages)
			}
		}
		return nil
	})
	eventually(t, "strata report's resolved share per RDD", 30*time.Second, func() error {
		var rep []struct {
			RDDs []struct {
				RDD           int32    `json:"rdd"`
				ResolvedShare *float64 `json:"resolved_share"`
				Resolved      string   `json:"resolved"`
			} `json:"rdds"`
		}
		out := c.n.strata(t, "report", "--app", c.s.App, "-o", "json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			var one struct {
				RDDs []struct {
					RDD           int32    `json:"rdd"`
					ResolvedShare *float64 `json:"resolved_share"`
					Resolved      string   `json:"resolved"`
				} `json:"rdds"`
			}
			if err := json.Unmarshal([]byte(out), &one); err != nil {
				return fmt.Errorf("decode report: %v\n%s", err, out)
			}
			rep = append(rep, one)
		}
		want := map[int32]string{int32(c.s.Deser): "walked", int32(c.s.DF): "buffers"}
		for _, app := range rep {
			for _, x := range app.RDDs {
				w, ok := want[x.RDD]
				if !ok {
					continue
				}
				if x.ResolvedShare == nil || *x.ResolvedShare < 0.8 || *x.ResolvedShare > 1.6 || !bytes.HasPrefix([]byte(x.Resolved), []byte(w+" ")) {
					return fmt.Errorf("RDD %d in strata report: %q (share %v), want %s at 0.8-1.6 of Spark's bytes", x.RDD, x.Resolved, x.ResolvedShare, w)
				}
				delete(want, x.RDD)
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("RDDs %v not in strata report", want)
		}
		return nil
	})
}
