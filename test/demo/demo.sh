#!/usr/bin/env bash
# make demo: a collector on the embedded store, an agent, and a workload that
# reports three memory regions as the blocks of RDD 7; then the trace of its
# pages and the NUMA summary, read back from the collector; page faults per
# block; then a real Spark job (local mode, Spark 3.5 from make deps, or
# STRATA_DEMO_SPARK=4) under the JVM hook: its RDD blocks' records and pages,
# NUMA summary, faults, and why its blocks were freed (skipped, with the
# reason, when Spark or java is missing); then the job heuristics.
# Unattended: no prompt, no terminal; exits non-zero if any step fails.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STRATA_BIN:-$root/bin}
work=$(mktemp -d /tmp/strata-demo.XXXXXX)
pids=()

cleanup() {
	exec 3>&- 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
	local t=$1 what=$2
	shift 2
	for ((i = 0; i < t * 10; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "demo: timed out waiting for $what" >&2
	return 1
}

if [ "$(id -u)" != 0 ]; then
	echo "demo: not root: the agent cannot read PFNs or kpageflags; pages will show pfn_hidden" >&2
fi

say "collector (embedded DuckDB store in $work/store)"
"$bin/strata-collector" --listen 127.0.0.1:0 --insecure --store-dir "$work/store" --http "${STRATA_DEMO_HTTP:-127.0.0.1:0}" \
	--history "$work/histories" --history-interval 1s >"$work/collector.out" 2>"$work/collector.log" &
pids+=($!)
wait_for 60 "the collector" grep -q '^listening ' "$work/collector.out"
addr=$(sed -n 's/^listening //p' "$work/collector.out" | sed -n 1p)
echo "listening on $addr"

say "agent (hook socket $work/hook.sock)"
"$bin/strata-agent" --node-name demo-node --hook-socket "$work/hook.sock" --collector "$addr" \
	--spool-dir "$work/spool" --flush-interval 100ms >"$work/agent.log" 2>&1 &
agent=$!
pids+=($agent)
wait_for 30 "the agent's hook socket" test -S "$work/hook.sock"
echo "agent pid $agent"

say "workload: three regions reported as blocks of RDD 7"
gcc -std=gnu11 -O2 -I"$root/jvmhook/include" -I"$root/jvmhook/native" \
	-o "$work/regions" "$root/test/workload/regions.c" "$root/jvmhook/native/frame.c"
mkfifo "$work/stdin"
"$work/regions" --app app-demo --executor 1 --rdd 7 --socket "$work/hook.sock" <"$work/stdin" >"$work/regions.out" &
pids+=($!)
exec 3>"$work/stdin"
wait_for 30 "the workload" grep -q '"ready"' "$work/regions.out"
grep '"block"' "$work/regions.out"
sleep 1

say "strata trace --app app-demo --rdd 7 --partition 2 (the THP block; first pages)"
"$bin/strata" trace --collector "$addr" --app app-demo --rdd 7 --partition 2 --limit 8
say "strata trace --app app-demo --rdd 7 --partition 1 (half touched: odd pages not present)"
"$bin/strata" trace --collector "$addr" --app app-demo --rdd 7 --partition 1 --limit 6

say "strata numa --app app-demo"
"$bin/strata" numa --collector "$addr" --app app-demo

exec 3>&- # the workload frees its blocks and exits
wait_for 30 "the workload to exit" grep -q '"done"' "$work/regions.out"

say "page faults per block: 4 blocks of 4 MiB dropped and rewritten 3 times (3 x 1024 write faults each)"
gcc -std=gnu11 -O2 -I"$root/jvmhook/include" -I"$root/jvmhook/native" \
	-o "$work/blocks" "$root/test/e2e/blocks.c" "$root/jvmhook/native/frame.c"
mkfifo "$work/blocks.in"
"$work/blocks" "$work/hook.sock" app-demo-faults 16 4 0 0 3 <"$work/blocks.in" >"$work/blocks.out" &
pids+=($!)
exec 4>"$work/blocks.in"
wait_for 60 "the fault workload to touch its memory" grep -q '"touched"' "$work/blocks.out"
echo go >&4
wait_for 30 "its blocks to be registered" grep -q '"sent"' "$work/blocks.out"
if grep -q 'faults="on' "$work/agent.log"; then
	sleep 0.5 # the agent mirrors new blocks into the kernel asynchronously
	echo fault >&4
	wait_for 30 "the faults" grep -q '"faulted"' "$work/blocks.out"
	sleep 3 # counters are sent every 2 s
	"$bin/strata" faults --collector "$addr" --app app-demo-faults
	say "strata overhead --app app-demo-faults"
	"$bin/strata" overhead --collector "$addr" --app app-demo-faults
	say "strata hot --app app-demo-faults --limit 5 (pages by sampled faults)"
	"$bin/strata" hot --collector "$addr" --app app-demo-faults --limit 5
else
	echo "fault attribution is unavailable here: $(grep -o 'faults=[^ ]*.*' "$work/agent.log" | sed -n 1p)"
fi
exec 4>&-

spark_demo() { # a real Spark job in local mode under the JVM hook
	local series=${STRATA_DEMO_SPARK:-3.5} home ver jar opts app ser heap deser step
	if ! home=$(make -s -C "$root" spark-home SPARK="$series" 2>&1); then
		echo "skipping the Spark part: ${home%%$'\n'*}"
		return 0
	fi
	ver=${home##*/spark-}
	jar=$bin/sparkjob/sparkjob-$ver.jar
	if [ ! -f "$jar" ] || [ ! -f "$bin/jvmhook/strata-hook.jar" ]; then
		echo "skipping the Spark part: $jar or the hook is not built (make build)"
		return 0
	fi
	if ! command -v java >/dev/null; then
		echo "skipping the Spark part: no java on PATH"
		return 0
	fi
	opts=$("$bin/strata" hook-opts --install-hook "$bin/jvmhook" --hook-socket "$work/hook.sock")
	echo "spark-submit --master local[2] --conf spark.driver.extraJavaOptions=\"\$(strata hook-opts) -XX:+UseParallelGC\" ..."
	echo "(in local mode the driver is the executor; on a cluster: spark.executor.extraJavaOptions)"
	# The test job (test/spark/job): RDDs cached off heap (OFF_HEAP), on heap
	# serialized and deserialized, a cached DataFrame and a sort on
	# off-heap Tungsten pages; then full GCs, an unpersist and an eviction,
	# one step per line on our fifo.
	mkfifo "$work/spark.in"
	SPARK_HOME=$home SPARK_LOCAL_IP=127.0.0.1 "$home/bin/spark-submit" --master 'local[2]' --driver-memory 700m \
		--conf spark.driver.extraJavaOptions="$opts -XX:+UseParallelGC" --conf spark.ui.enabled=false \
		--conf spark.ui.showConsoleProgress=false --conf spark.testing.memory=536870912 --conf spark.memory.fraction=0.2 \
		--conf spark.sql.shuffle.partitions=2 --conf spark.buffer.pageSize=1m --conf spark.sql.adaptive.enabled=false \
		--conf spark.rdd.compress=false --conf spark.memory.offHeap.enabled=true --conf spark.memory.offHeap.size=32m \
		--class org.stratatrace.sparkjob.StrataJob "$jar" --offheap --parts 4 --records 8 --record 131072 --evict-mb 48 \
		<"$work/spark.in" >"$work/spark.out" 2>"$work/spark.log" &
	local job=$!
	pids+=($job)
	exec 5>"$work/spark.in"
	step() { # step NAME: wait for the job's step line; fail at once if the job died
		for ((i = 0; i < 3000; i++)); do
			if grep -q "\"step\":\"$1\"" "$work/spark.out"; then return 0; fi
			if ! kill -0 "$job" 2>/dev/null; then break; fi
			sleep 0.1
		done
		echo "demo: the Spark job did not reach its step $1; its log ends:" >&2
		tail -20 "$work/spark.log" >&2
		return 1
	}
	step cached
	step=$(grep '"step":"cached"' "$work/spark.out")
	app=$(sed -n 's/.*"app":"\([^"]*\)".*/\1/p' <<<"$step")
	ser=$(sed -n 's/.*"ser":\([0-9]*\).*/\1/p' <<<"$step")
	heap=$(sed -n 's/.*"ser_heap":\([0-9]*\).*/\1/p' <<<"$step")
	deser=$(sed -n 's/.*"deser":\([0-9]*\).*/\1/p' <<<"$step")
	echo "$(grep -o 'strata-hook: on.*' "$work/spark.log" | sed -n 1p); application $app, pid $(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' <<<"$step")"
	sleep 1

	say "strata report --app $app (per RDD: what Spark accounts, what Strata resolved and how)"
	"$bin/strata" report --collector "$addr" --app "$app"
	say "strata records --app $app --block rdd_${deser}_0 (a MEMORY_ONLY block, what rdd.cache() stores: its array of references, then its walked objects)"
	"$bin/strata" records --collector "$addr" --app "$app" --block "rdd_${deser}_0"
	say "strata records --app $app --rdd $ser --access alloc (RDD $ser cached OFF_HEAP: a range per chunk)"
	"$bin/strata" records --collector "$addr" --app "$app" --rdd "$ser" --access alloc
	say "strata trace --app $app --rdd $ser --partition 0 --limit 6 (its pages)"
	"$bin/strata" trace --collector "$addr" --app "$app" --rdd "$ser" --partition 0 --limit 6
	say "strata numa --app $app"
	"$bin/strata" numa --collector "$addr" --app "$app"
	if grep -q 'faults="on' "$work/agent.log"; then
		sleep 2 # counters are sent every 2 s
		say "strata faults --app $app (blocks with faults: first touches of the sort's off-heap Tungsten pages; first 10)"
		"$bin/strata" faults --collector "$addr" --app "$app" | awk 'NR == 1 || $6 + $7 + $8 + $9 + $10 > 0' | sed -n 1,11p
	fi

	# Full GCs, unpersist of RDD $ser, and eviction: let the job run to its end.
	for s in gc unpersisted evicted; do
		echo next >&5
		step "$s"
	done
	exec 5>&-
	wait_for 120 "the Spark job to exit" grep -q '"step":"done"' "$work/spark.out"
	wait "$job"
	sleep 1
	say "strata records --app $app --block rdd_${heap}_0 (a MEMORY_ONLY_SER block: put, moved by the GCs, cleared at exit)"
	"$bin/strata" records --collector "$addr" --app "$app" --block "rdd_${heap}_0"
	say "strata records --app $app --access free: ranges freed, by kind and reason"
	"$bin/strata" records --collector "$addr" --app "$app" --access free -o json |
		sed -n 's/.*"kind":"\([a-z_]*\)".*"free_reason":"\([a-z_]*\)".*/\1 \2/p' | sort | uniq -c | sort -rn
}

say "Apache Spark: a real job under the JVM hook"
spark_demo

say "Dr. Elephant heuristics over generated job histories (strata-gen, strata analyze)"
"$bin/strata-gen" -out "$work/histories/mr" -kind mr -jobs 1 -maps 200 -skew 10 -gc 0.3 -used-mb 200 -container-mb 4096 >/dev/null
"$bin/strata-gen" -out "$work/histories/spark" -kind spark -jobs 1 >/dev/null
"$bin/strata" analyze "$work/histories"
samples=${STRATA_SAMPLES:-$root/../shared/data}
if [ -d "$samples" ]; then
	say "... and over the sample histories and event logs in $samples (moderate and worse, first 24)"
	"$bin/strata" analyze -severity moderate "$samples" 2>/dev/null | sed -n 1,25p
else
	echo "(sample data not found at $samples: set STRATA_SAMPLES to analyse it too)"
fi

say "web UI"
# A block that stays in memory while the UI is up, so the map has pages.
exec 5> >(exec "$work/regions" --app app-demo --executor 2 --rdd 8 --socket "$work/hook.sock" >"$work/ui-regions.out")
wait_for 30 "the UI's workload" grep -q '"ready"' "$work/ui-regions.out"
ui=$(sed -n 's/^http //p' "$work/collector.out" | sed -n 1p)
echo "web UI: http://$ui/  (jobs: http://$ui/jobs, memory of app-demo: http://$ui/apps/app-demo/memory)"
if [ "${STRATA_DEMO_NONINTERACTIVE:-}" != 1 ] && [ -t 0 ]; then
	echo "the UI stays up until Ctrl-C"
	trap 'true' INT # Ctrl-C ends the wait below; background jobs ignore it
	sleep infinity &
	sleeper=$!
	wait "$sleeper" || true
	kill "$sleeper" 2>/dev/null || true
	trap - INT
fi
exec 5>&-

say "stopping"
kill -TERM "$agent"
wait "$agent"
kill -TERM "${pids[0]}"
wait "${pids[0]}"
pids=()
echo "agent: $(grep -o 'agent stopped.*' "$work/agent.log" | cut -c 1-400)"
echo "demo finished"
