// Package images assembles Strata's OCI images without a container engine:
// `make images` builds the binaries with go build and calls mkimage, which
// lays their files into layers with go-containerregistry and writes one OCI
// image layout archive per image (bin/images/strata-agent.tar,
// strata-collector.tar). Load one with `skopeo copy
// oci-archive:bin/images/strata-agent.tar docker-daemon:strata/agent:TAG`,
// `podman load -i`, or push it with `crane push`.
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
//     from the build machine's Debian packages into a layer of their own,
//     each package's copyright file beside them, and the list of packages
//     and versions in /usr/share/strata/packages.txt. It runs as uid 65532
//     (nonroot), its store under /var/lib/strata/collector.
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
