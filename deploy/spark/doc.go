// Package spark holds examples of Spark on Kubernetes under Strata's hook:
// an executor pod template (executor-pod-template.yaml) and a Spark
// Operator SparkApplication (sparkapplication.yaml). Its tests keep them
// true: both decode strictly, mount the host directories the chart's agent
// serves (deploy/kubernetes/strata.yaml, the chart rendered with its
// defaults) and carry its hook options, and the Pod Security evaluator of
// Kubernetes finds nothing but their hostPath volumes to refuse at the
// Baseline and Restricted levels, which is why docs/deploy.md asks for the
// Privileged level on the executors' namespace. A connection to the socket
// through a read-only mount works (connect(2) writes nothing to the file
// system), so both mounts are read-only.
package spark
