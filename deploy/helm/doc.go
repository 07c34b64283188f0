// Package helm holds the tests of Strata's Helm chart (deploy/helm/strata):
// they render it with Helm's Go library, as `helm template` would (which
// also checks the values against values.schema.json), decode every object
// strictly into the Kubernetes API types (an unknown or misspelt field
// fails; the Prometheus Operator's objects as plain JSON), and check what an
// operator relies on: the agent's hostPID, capabilities, host mounts (hook
// socket, hook files, spool, /sys/kernel/btf), probes and resources; the
// collector's probes, store, retention, heuristics and credentials; that
// the STRATA_* variables the chart sets are the ones the agent's and the
// collector's configuration loaders read; that the ServiceMonitor and
// PodMonitor select their targets and send the token Secret those mount;
// that every metric an alert names is exposed; that the optional objects
// are absent by default; that executors mount the agent's directories
// read-only; that the schema refuses wrong values, naming them; and that
// Helm's linter in strict mode (helm lint --strict) finds nothing with the
// defaults and with every optional part on (testdata/all-on.yaml).
//
// Two files are generated and kept so (go test ./deploy/helm -update
// rewrites them): deploy/kubernetes/strata.yaml, the chart rendered with
// its defaults (release "strata", namespace "strata"), and the values table
// of strata/README.md, made from the "# --" comments of values.yaml.
package helm
