package heuristics

import (
	"slices"

	"github.com/stratatrace/strata/collector/job"
)

// entry is one registered heuristic. Each heuristic file registers itself
// in init; the registry is the package's only package-level state and is
// never written after init.
type entry struct {
	key   string   // config key, e.g. "mapper_skew"
	name  string   // display name
	typ   job.Type // application type it applies to; "" for cross-layer
	order int      // position in results (Dr. Elephant's shipped order)
	// common returns the heuristic's switches from a config.
	common func(*Config) Common
	// build makes a job heuristic; nil for cross-layer ones.
	build func(*Config) Heuristic
	// buildTrace makes a cross-layer heuristic; nil for job ones.
	buildTrace func(*Config) TraceHeuristic
}

var registry []entry

func register(e entry) {
	for _, r := range registry {
		if r.key == e.key || r.name == e.name {
			panic("heuristics: duplicate registration of " + e.key)
		}
	}
	registry = append(registry, e)
	slices.SortStableFunc(registry, func(a, b entry) int { return a.order - b.order })
}

// Result order. MapReduce follows Dr. Elephant's shipped HeuristicConf.xml.
const (
	orderMapperSkew = 100 + iota
	orderMapperGC
	orderMapperTime
	orderMapperSpeed
	orderMapperSpill
	orderMapperMemory
	orderReducerSkew
	orderReducerGC
	orderReducerTime
	orderReducerMemory
	orderShuffleSort
	orderException
	orderDistCache
	orderQueueLimit
)

const (
	orderSparkConfig = 200 + iota
	orderSparkExecutors
	orderSparkJobs
	orderSparkStages
	orderSparkGC
)

const (
	orderNUMABalance = 300 + iota
	orderCachedSwap
	orderRemoteFaults
	orderFaultOverhead
	orderTHPCoverage
)
