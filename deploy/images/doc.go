// Package images assembles Strata's OCI images without a container engine:
// `make images` builds each architecture's binaries (amd64 and arm64, the
// latter through Debian's aarch64-linux-gnu cross compilers) with go build
// and calls mkimage, which lays their files into layers with
// go-containerregistry and writes one OCI image layout archive per image
// (bin/images/strata-agent.tar, strata-collector.tar). An archive's
// index.json holds one image index, annotated with the reference manifests
// pull (org.opencontainers.image.ref.name strata/agent:TAG, TAG being the
// Helm chart's appVersion), whose manifests are linux/amd64 and linux/arm64.
// Push both with `skopeo copy --all oci-archive:bin/images/strata-agent.tar
// docker://REGISTRY/strata/agent:TAG`, or load this host's with
// `podman load -i`.
//
// No base image is pulled (no registry that serves them is reachable from
// the build machines): each image starts FROM scratch.
//
//   - strata-agent: the static agent (CGO_ENABLED=0) at /usr/bin, the JVM
//     hook files at /usr/share/strata/jvmhook (the agent's --install-hook
//     copies them to a host path for executors), CA certificates, and an
//     /etc/passwd naming root. It runs as root: it reads other processes'
//     pagemap and loads BPF programs.
//   - strata-collector: the collector, linked against glibc and libstdc++
//     for its embedded DuckDB store, with the shared libraries it needs
//     (the closure of its ELF DT_NEEDED entries and its interpreter) copied
//     from Debian packages (the build machine's installed ones, or .deb
//     files unpacked: make images downloads arm64's) into a layer of their
//     own, each package's copyright file beside them, its dpkg status entry
//     in /var/lib/dpkg/status.d/PACKAGE and the md5 of its files there in
//     PACKAGE.md5sums (distroless's layout, which image scanners read),
//     and the list of packages, versions and files in
//     /usr/share/strata/packages.txt. It runs as uid 65532 (nonroot), its
//     store under /var/lib/strata/collector.
//
// Every ELF file an image holds must be built for its architecture's
// machine; the build fails otherwise (ErrArch).
//
// Layers are reproducible: files are sorted, owned by the ids the image
// runs as, and dated Spec.Created (SOURCE_DATE_EPOCH in make images), so
// the same binaries give the same digests.
//
// deploy/images/agent.Dockerfile and collector.Dockerfile build the same
// images with a container engine elsewhere (multi-stage: golang builder,
// then scratch for the agent and distroless/cc for the collector); they
// are not built on the development machines, which have no engine.
package images
