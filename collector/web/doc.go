// Package web is the collector's web UI and the JSON API under it, an
// http.Handler built by New over the store. Every page and every API
// answer asks collector/query's Service (its gRPC methods and the Go
// methods it adds for the UI: SearchJobs, Apps, Occupancy, PhysMap,
// Blocks, BlockLife …); this package only reads requests and draws.
//
// Pages (HTML from html/template, charts drawn as SVG on the server; one
// script, memmap.js, zooms the physical memory map through the API):
//
//	/                                  dashboard: jobs by severity over time, worst recent jobs, traced apps
//	/jobs                              search: user, queue, type, severity, finish time; paged on the server
//	/jobs/{id}                         a job: metrics, heuristics, cross-layer heuristics, link to its app
//	/apps                              applications holding traces
//	/apps/{app}                        RDD table, pages per NUMA node, occupation over time, memory map overview
//	/apps/{app}/memory                 the physical memory map (?machine=&from=&to= in PFNs)
//	/apps/{app}/rdds/{rdd}             an RDD's blocks and what Strata resolved of each, buffer by buffer, and their DAMON heat
//	/apps/{app}/blocks/{exec}/{block}  a block's life: every record with the pages it held
//	/apps/{app}/overhead               fault rates per RDD and process, page-walk share or why not
//
// The JSON API (/api/v1/…, docs/api.md) writes every answer in the form of
// collector/query/jsonform with its Encoder: the objects `strata … -o json`
// prints. Errors are {"error": "..."} with 400 for ErrInvalidQuery or a
// bad parameter, 404 for ErrNotFound, 503 for ErrClosed.
//
// Everything the pages need is embedded (go:embed); nothing is fetched at
// run time. The handler does no authentication: collector/server mounts it
// behind its own. It never writes to the store.
package web
