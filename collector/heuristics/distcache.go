package heuristics

import (
	"strconv"
	"strings"

	"github.com/stratatrace/strata/collector/job"
)

// Distributed Cache Limit (docs/heuristics.md#distributed-cache-limit): a
// cache file or archive larger than the limit is CRITICAL; a mismatch
// between a path list and its size list is MODERATE and stops the check
// (archives are then not looked at, and an archive mismatch overrides an
// earlier CRITICAL). No result when neither files nor archives come with
// sizes.

// DistCacheParams are the parameters of Distributed Cache Limit.
type DistCacheParams struct {
	Common             `yaml:",inline"`
	FileSizeLimitBytes int64 `yaml:"file_size_limit_bytes" check:"positive" help:"largest cache file or archive"`
}

// The limit is the one Dr. Elephant's code reads (500 MiB); the 500 MB its
// shipped configuration sets is under a key the code never reads.
var distCache = register(def[DistCacheParams]{Key: "distributed_cache", Name: "Distributed Cache Limit", Type: job.MapReduce, Order: 113,
	Defaults: DistCacheParams{FileSizeLimitBytes: 500 << 20},
	Build:    func(p DistCacheParams, _ *Config) Heuristic { return &DistCache{limit: p.FileSizeLimitBytes} }})

// Configuration keys read by Distributed Cache Limit.
const (
	confCacheFiles        = "mapreduce.job.cache.files"
	confCacheFileSizes    = "mapreduce.job.cache.files.filesizes"
	confCacheArchives     = "mapreduce.job.cache.archives"
	confCacheArchiveSizes = "mapreduce.job.cache.archives.filesizes"
)

// DistCache is the Distributed Cache Limit heuristic.
type DistCache struct{ limit int64 }

// Apply implements Heuristic.
func (h *DistCache) Apply(j *job.Job) Result {
	if !j.Succeeded() {
		return skip
	}
	files, fok := j.Conf[confCacheFiles]
	fsizes, fsok := j.Conf[confCacheFileSizes]
	archives, aok := j.Conf[confCacheArchives]
	asizes, asok := j.Conf[confCacheArchiveSizes]
	haveFiles, haveArchives := fok && fsok, aok && asok
	if !haveFiles && !haveArchives {
		return skip
	}
	r := Result{Severity: None}
	for _, set := range []struct {
		have         bool
		kind         string
		paths, sizes string
	}{{haveFiles, "files", files, fsizes}, {haveArchives, "archives", archives, asizes}} {
		if !set.have {
			continue
		}
		p, s := strings.Split(set.paths, ","), strings.Split(set.sizes, ",")
		if len(p) != len(s) {
			r.Severity = Moderate
			r.Details = append(r.Details,
				detail("Number of cache "+set.kind, itoa(int64(len(p)))),
				detail("Number of cache "+set.kind+" sizes", itoa(int64(len(s)))))
			return r
		}
		for i := range p {
			size, err := strconv.ParseInt(strings.TrimSpace(s[i]), 10, 64)
			if err != nil {
				size = 0
			}
			if size > h.limit {
				r.Severity = Critical
				r.Details = append(r.Details, detail(p[i], itoa(size)))
			}
		}
	}
	return r
}
