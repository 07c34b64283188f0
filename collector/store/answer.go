package store

import "github.com/stratatrace/strata/collector/answer"

// The questions the readers answer and their answers are package answer's,
// which links no backend (the user CLI imports it without cgo). The store
// names them too, so its backends and their callers spell them store.X.
type (
	TraceReader    = answer.TraceReader
	UIReader       = answer.UIReader
	TraceQuery     = answer.TraceQuery
	RecordsQuery   = answer.RecordsQuery
	HotQuery       = answer.HotQuery
	HeatQuery      = answer.HeatQuery
	Heat           = answer.Heat
	HeatRDD        = answer.HeatRDD
	HeatPoint      = answer.HeatPoint
	HeatBlock      = answer.HeatBlock
	HeatFigures    = answer.HeatFigures
	MomentKind     = answer.MomentKind
	MomentQuery    = answer.MomentQuery
	Moment         = answer.Moment
	BlockCoverage  = answer.BlockCoverage
	BufferCoverage = answer.BufferCoverage
	JobOrder       = answer.JobOrder
	JobQuery       = answer.JobQuery
	JobPage        = answer.JobPage
	SeverityBucket = answer.SeverityBucket
	AppSummary     = answer.AppSummary
	OccupancyPoint = answer.OccupancyPoint
	PhysMapQuery   = answer.PhysMapQuery
	PhysMap        = answer.PhysMap
	NodeSpan       = answer.NodeSpan
	RDDPages       = answer.RDDPages
	PFNBucket      = answer.PFNBucket
	RDDCount       = answer.RDDCount
	BlockRef       = answer.BlockRef
)

// The moments a MomentQuery asks for and the orders of SearchJobs.
const (
	MomentDefault = answer.MomentDefault
	MomentNow     = answer.MomentNow
	MomentPeak    = answer.MomentPeak
	MomentAt      = answer.MomentAt
	JobsNewest    = answer.JobsNewest
	JobsWorst     = answer.JobsWorst
)
