// Package profiling sends continuous CPU and memory profiles of a Strata
// process (agent or collector) to a Pyroscope server, through pyroscope-go.
//
// Start with an empty server address starts nothing and returns a nil
// *Profiler, whose Stop does nothing: profiling costs nothing unless an
// operator asked for it (--pyroscope-server). When it runs, the process
// samples its CPU at 100 Hz and takes heap profiles, uploading every
// Config.UploadRate (15 s by default); pyroscope-go's forced GC before
// each heap profile is off, so the agent's collection cycles stay its own.
// Uploads that fail are logged by the library at error level through the
// caller's logger and never stop the process.
package profiling
