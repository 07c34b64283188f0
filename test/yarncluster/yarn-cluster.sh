#!/usr/bin/env bash
# yarn-cluster: Strata's YARN test cluster (test/yarncluster, built by
# `make yarncluster` into bin/yarncluster/) and Hadoop clients for it.
#
#   yarn-cluster start DIR [--nodemanagers N] [--nm-memory-mb MB] [--nm-vcores N] [--eof-stops]
#       HDFS, a ResourceManager, NodeManagers and the MapReduce
#       JobHistoryServer in one JVM working in DIR (what an earlier start
#       left there is removed); prints one line "YARNCLUSTER {json}" with
#       its addresses and DIR/conf, the client configuration for
#       HADOOP_CONF_DIR. Stops on SIGTERM or SIGINT (with --eof-stops also
#       when stdin closes). Its log: DIR/yarncluster.log.
#   yarn-cluster client CONF_DIR CLASS [ARGS...]
#       runs a Hadoop client class against the cluster configured in
#       CONF_DIR, e.g. org.apache.hadoop.fs.FsShell -put ... or
#       org.apache.hadoop.examples.ExampleDriver wordcount IN OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${JAVA_HOME:-}" ]; then
	# The NodeManagers start containers with $JAVA_HOME/bin/java.
	JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
	export JAVA_HOME
fi
java="$JAVA_HOME/bin/java"
# What Hadoop 3.3 needs opened on JDK 17: the web applications of the
# ResourceManager, the JobHistoryServer and the MapReduce application master
# build their Guice injectors through cglib, which defines classes in
# java.lang (docs/yarn.md).
opens="--add-opens=java.base/java.lang=ALL-UNNAMED"
classpath="$here/yarncluster.jar:$here/lib/*"

case "${1:-}" in
start)
	[ $# -ge 2 ] || { echo "usage: yarn-cluster start DIR [flags]" >&2; exit 2; }
	dir=$(mkdir -p "$2" && cd "$2" && pwd)
	shift 2
	cd "$dir"
	# A cluster started here before left these (and nothing else is removed).
	rm -rf target dfs conf cluster.json yarncluster.log
	exec "$java" -Xmx1g $opens -Dyarncluster.container-opts="$opens" \
		-Dlog4j.configuration="file:$here/log4j-cluster.properties" -Dyarncluster.log="$dir/yarncluster.log" \
		-Djava.util.logging.config.file="$here/logging.properties" \
		-cp "$classpath" org.stratatrace.yarncluster.YarnCluster "$@"
	;;
client)
	[ $# -ge 3 ] || { echo "usage: yarn-cluster client CONF_DIR CLASS [ARGS...]" >&2; exit 2; }
	conf=$(cd "$2" && pwd)
	shift 2
	exec "$java" -Xmx512m $opens -Dlog4j.configuration="file:$here/log4j-client.properties" \
		-cp "$conf:$classpath" "$@"
	;;
*)
	sed -n '2,18s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
