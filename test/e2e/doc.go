// Package e2e runs Strata's real binaries together: a collector on an
// embedded store, an agent on a real hook socket, and the C workload that
// reports memory regions the way the JVM hook reports Spark blocks. The
// tests check what a user would: every page the collector returns against
// the test's own reading of /proc/PID/pagemap and the bytes at each address
// through /proc/PID/mem.
//
// Binaries come from $STRATA_BIN (make test sets it to bin/) or are built
// into a temporary directory.
package e2e
