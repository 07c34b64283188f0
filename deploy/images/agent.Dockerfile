# syntax=docker/dockerfile:1
# The Strata agent's image, for a machine with a container engine:
#   docker build -f deploy/images/agent.Dockerfile --build-arg VERSION=$(git describe --always) -t strata/agent .
# `make images` assembles the same image without an engine (deploy/images,
# FROM scratch as here); this file is not built on the development machines,
# and TestDockerfilesMatchSpecs keeps its entrypoint, user, ports and
# volumes equal to the assembled image's.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
# The JVM hook: Maven builds the Java agent, gcc the JNI library.
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven gcc make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# Static: the image holds no C library.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/stratatrace/strata/agent.Version=${VERSION}" \
    -o /out/strata-agent ./cmd/strata-agent
RUN make jvmhook HOOK_OUT=/out/jvmhook
RUN mkdir -p /rootfs/etc /rootfs/tmp /rootfs/root /rootfs/var/lib/strata/spool && chmod 1777 /rootfs/tmp \
    && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /rootfs/etc/passwd \
    && printf 'root:x:0:\nnonroot:x:65532:\n' > /rootfs/etc/group \
    && printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/strata-agent /usr/bin/strata-agent
COPY --from=build /out/jvmhook/strata-hook.jar /out/jvmhook/libstratahook.so /usr/share/strata/jvmhook/
ENV PATH=/usr/bin:/bin
# Root: it reads other processes' pagemap and loads BPF programs (the
# DaemonSet adds the capabilities).
USER 0:0
EXPOSE 9464/tcp
VOLUME /var/lib/strata/spool
ENTRYPOINT ["/usr/bin/strata-agent"]
