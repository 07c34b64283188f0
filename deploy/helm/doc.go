// Package helm holds the tests of Strata's Helm chart (deploy/helm/strata):
// they render it with Helm's Go library, as `helm template` would, decode
// every object strictly into the Kubernetes API types (an unknown or
// misspelt field fails), and check what an operator relies on: the agent's
// hostPID, capabilities, host mounts (hook socket, hook files, spool,
// /sys/kernel/btf), probes and resources; the collector's probes, store and
// credentials; and that the STRATA_* variables the chart sets are the ones
// the agent's and the collector's configuration loaders read. The plain
// manifests in deploy/kubernetes/strata.yaml are the chart rendered with its
// defaults (release "strata", namespace "strata"); TestManifestsRendered
// keeps them so (go test ./deploy/helm -update rewrites them).
package helm
