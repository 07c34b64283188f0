# Strata: one Makefile for the Go module, the BPF objects and the JVM hook.
SHELL := /bin/bash
GO ?= go
BIN := bin
GOTESTFLAGS ?= -count=1 -timeout 15m
FUZZTIME ?= 30s
export STRATA_SAMPLES ?= $(abspath ../shared/data)

APT_PKGS := clang-14 llvm-14 bpftool libbpf-dev protobuf-compiler libasm-java gcc make

.PHONY: help deps generate build test bench demo fuzz clean check-generated vmlinux

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

deps: ## install what a fresh machine lacks (apt packages, Go modules)
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	$(GO) mod download

generate: ## regenerate protos, BPF objects and vmlinux-derived code (byte-identical)
	$(GO) generate ./...

vmlinux: ## regenerate bpf/include/vmlinux.h from this kernel's BTF (not part of generate: kernel-specific)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/include/vmlinux.h

check-generated: generate ## fail when generated code differs from what is committed
	git diff --exit-code -- '*.pb.go' '*_bpfel.go' '*_bpfel.o'

build: ## build the binaries into bin/
	$(GO) build -o $(BIN)/ ./cmd/...
	@if [ -f jvmhook/Makefile ]; then $(MAKE) -C jvmhook; fi

test: build ## run every test (root-only tests skip with a reason when not root)
	@if [ -f jvmhook/Makefile ]; then $(MAKE) -C jvmhook test; fi
	$(GO) vet ./...
	STRATA_BIN=$(abspath $(BIN)) $(GO) test $(GOTESTFLAGS) ./...

bench: build ## benchmarks; each prints its ratio against a baseline measured in the same run
	STRATA_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench . -benchtime 1x -count 1 -timeout 60m ./... | tee $(BIN)/bench.txt

fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for f in $$(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' $$dir/*_test.go 2>/dev/null | awk '{print $$2}'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

demo: build ## start a collector (embedded store) and an agent, run a workload, print its trace
	bash test/demo/demo.sh

clean: ## remove build outputs
	rm -rf $(BIN) jvmhook/build
