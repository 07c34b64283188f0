package hooksrv

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratatrace/strata/agent/dropped"
)

// Collector exports a Server's Stats and Refusals as strata_hook_* and
// the hook stage's series of strata_dropped_total, read at every scrape.
type Collector struct {
	s *Server
}

// NewCollector returns the collector of s.
func NewCollector(s *Server) *Collector { return &Collector{s: s} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// dropDesc is this stage's series of strata_dropped_total.
func dropDesc(reason string) *prometheus.Desc { return dropped.Desc("hook", reason) }

var (
	sessionsDesc      = desc("strata_hook_sessions_total", "Hook connections accepted.")
	activeDesc        = desc("strata_hook_sessions_active", "Hook sessions open now.")
	framesDesc        = desc("strata_hook_frames_total", "Hook frames accepted.")
	rejectedDesc      = desc("strata_hook_frames_rejected_total", "Frames naming a pid that is not the peer's (SO_PEERCRED).")
	unknownDesc       = desc("strata_hook_frames_unknown_total", "MOVE, ACCESS or FREE frames of a block that is not live (its REGISTER was dropped).")
	malformedDesc     = desc("strata_hook_sessions_malformed_total", "Sessions closed for a malformed frame.")
	peerDroppedDesc   = desc("strata_hook_frames_dropped_by_peer_total", "Frames whose information hooks lost: ACCESS frames no connection delivered, and frames a full queue or socket refused.")
	liveBlocksDesc    = desc("strata_hook_live_blocks", "Live blocks as the hook server counts them against its caps.")
	sessionsRefused   = desc("strata_hook_sessions_refused_total", "Hook connections closed at accept: a session cap was reached.", "cap")
	sessionsClosed    = desc("strata_hook_sessions_closed_total", "Hook sessions closed for silence.", "reason")
	framesRefused     = desc("strata_hook_frames_refused_total", "Hook frames dropped at a bound; the session goes on.", "reason")
	walksDesc         = desc("strata_hook_walks_total", "Complete walks (and stale marks) of deserialized blocks' objects and cached batch columns' buffers received.")
	walksIncomplete   = desc("strata_hook_walks_incomplete_total", "Walks lost because one of their parts did not arrive (the hook dropped it): their blocks kept their previous walk.")
	jvmsOff           = desc("strata_hook_jvms_off_total", "JVMs whose hook stayed off, by the reason the hook reported (OFF frames); the agent's log has each one's pid and detail.", "reason")
	dropSocketFull    = dropDesc("socket_full")
	dropRangeLength   = dropDesc("range_length")
	dropOutsideUser   = dropDesc("user_space")
	dropAccessOutside = dropDesc("access_outside")
	dropBlocksUID     = dropDesc("blocks_uid")
	dropBlocksNode    = dropDesc("blocks_node")
	dropWalkExtents   = dropDesc("walk_extents")
	dropWalkPartial   = dropDesc("walk_incomplete")
	dropForeignPID    = dropDesc("foreign_pid")
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st, r := c.s.Stats(), c.s.Refusals()
	count := func(d *prometheus.Desc, v uint64, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), label...)
	}
	count(sessionsDesc, st.Sessions)
	ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, float64(st.Active))
	count(framesDesc, st.Frames)
	count(rejectedDesc, st.Rejected)
	count(unknownDesc, st.Unknown)
	count(malformedDesc, st.Malformed)
	count(peerDroppedDesc, st.DroppedByPeer)
	ch <- prometheus.MustNewConstMetric(liveBlocksDesc, prometheus.GaugeValue, float64(c.s.LiveBlocks()))
	count(sessionsRefused, r.SessionsTotal, "node")
	count(sessionsRefused, r.SessionsPerUID, "uid")
	count(sessionsRefused, r.SessionsPerPID, "pid")
	count(sessionsClosed, r.HelloTimeout, "hello_timeout")
	count(sessionsClosed, r.Idle, "idle")
	count(framesRefused, r.RangeTooLong, "range_length")
	count(framesRefused, r.OutsideUserSpace, "user_space")
	count(framesRefused, r.AccessOutside, "access_outside")
	count(framesRefused, r.BlocksPerUID, "blocks_uid")
	count(framesRefused, r.BlocksPerNode, "blocks_node")
	count(framesRefused, r.WalkTooLarge, "walk_extents")
	count(framesRefused, r.WalkNotGraphOrBatch, "walk_block")
	count(walksDesc, st.Walks)
	count(walksIncomplete, st.WalksIncomplete)
	for r := OffReason(1); r <= offReasonMax; r++ {
		count(jvmsOff, st.Off[r], r.String())
	}

	count(dropSocketFull, st.DroppedByPeer)
	count(dropRangeLength, r.RangeTooLong)
	count(dropOutsideUser, r.OutsideUserSpace)
	count(dropAccessOutside, r.AccessOutside)
	count(dropBlocksUID, r.BlocksPerUID)
	count(dropBlocksNode, r.BlocksPerNode)
	count(dropWalkExtents, r.WalkTooLarge)
	count(dropWalkPartial, st.WalksIncomplete)
	count(dropForeignPID, st.Rejected)
}
