// Package spark holds examples of Spark on Kubernetes under Strata's hook:
// an executor pod template (executor-pod-template.yaml) and a Spark
// Operator SparkApplication (sparkapplication.yaml). Its tests keep them
// true: both decode strictly, mount the host directories the chart's agent
// serves (deploy/kubernetes/strata.yaml, the chart rendered with its
// defaults) and carry its hook options, and the Pod Security evaluator of
// Kubernetes finds nothing but their hostPath volumes to refuse at the
// Baseline and Restricted levels, which is why docs/deploy.md asks for the
// Privileged level on the executors' namespace. Both mounts are read-only:
// connect(2) on a Unix socket checks write permission on the socket's inode
// (the agent's socket mode), not on the mount, which a root-only test shows
// with the agent's own socket server, a read-only bind mount and a process
// of Spark's image user (uid 185).
package spark
