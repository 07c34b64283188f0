package heuristics

import "testing"

// Distributed Cache Limit vectors (docs/heuristics.md#test-vectors) with
// limit 500 000 000 and three paths each.
func TestDistCacheVectors(t *testing.T) {
	h := &DistCache{limit: 500_000_000}
	base := func(fsizes, asizes string) map[string]string {
		return map[string]string{
			confCacheFiles:        "/path/to/firstCacheFile,/path/to/secondCacheFile,/path/to/thirdCacheFile",
			confCacheFileSizes:    fsizes,
			confCacheArchives:     "/path/to/firstCacheArchive,/path/to/secondCacheArchive,/path/to/thirdCacheArchive",
			confCacheArchiveSizes: asizes,
		}
	}
	dc7 := base("100,200,300", "400,500,600")
	delete(dc7, confCacheFiles)
	runVectors(t, h, []vector{
		{"DC-1", mrJob(nil, nil, base("100,200,300", "400,500,600")), None, 0},
		{"DC-3", mrJob(nil, nil, base("100,200,300", "400,500")), Moderate, 0},
		{"DC-5", mrJob(nil, nil, base("100,200,300", "400,500,600000000")), Critical, 0},
		{"DC-7", mrJob(nil, nil, dc7), None, 0},
		{"file mismatch stops before archives", mrJob(nil, nil, base("100", "400,500,600000000")), Moderate, 0},
		{"archive mismatch overrides CRITICAL file", mrJob(nil, nil, base("100,200,600000000", "1")), Moderate, 0},
	})
	if r := h.Apply(mrJob(nil, nil, nil)); !r.Skip {
		t.Fatalf("no cache conf: %+v, want skip", r)
	}
	if d := distCache.of(DefaultConfig()).FileSizeLimitBytes; d != 524_288_000 {
		t.Fatalf("default limit %d, want 500 MiB", d)
	}
}
