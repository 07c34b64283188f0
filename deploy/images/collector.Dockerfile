# syntax=docker/dockerfile:1
# The Strata collector's image, for a machine with a container engine:
#   docker build -f deploy/images/collector.Dockerfile --build-arg VERSION=$(git describe --always) -t strata/collector .
# `make images` assembles the equivalent image without an engine
# (deploy/images: the same binary with the glibc and libstdc++ files of the
# build machine's Debian 12 packages, where this file uses distroless/cc,
# built from the same packages); this file is not built on the development
# machines, and TestDockerfilesMatchSpecs keeps its entrypoint, user, ports,
# volumes and environment equal to the assembled image's.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# cgo: the embedded store is DuckDB's C++ library.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X github.com/stratatrace/strata/collector/server.Version=${VERSION}" \
    -o /out/strata-collector ./cmd/strata-collector
RUN mkdir -p /rootfs/var/lib/strata/collector

# glibc, libgcc and libstdc++ from Debian 12, user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build --chown=65532:65532 /rootfs/ /
COPY --from=build /out/strata-collector /usr/bin/strata-collector
ENV PATH=/usr/bin:/bin
ENV STRATA_COLLECTOR_STORE_DIR=/var/lib/strata/collector
ENV STRATA_COLLECTOR_LISTEN=0.0.0.0:7070
USER 65532:65532
EXPOSE 7070/tcp 9090/tcp
VOLUME /var/lib/strata/collector
ENTRYPOINT ["/usr/bin/strata-collector"]
