package images

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Inputs are what one architecture's images are made of.
type Inputs struct {
	Arch        string // amd64, arm64: every binary must be built for it
	BinDir      string // holds strata-agent (static) and strata-collector
	HookDir     string // holds strata-hook.jar and libstratahook.so; empty: no hook files
	Version     string
	Created     time.Time
	Compression int // gzip level; 0: default
	// Debs holds the .deb files of the collector's runtime libraries for
	// Arch (unpacked into Debs/root); empty: this machine's installed
	// packages (dpkg's database), which must be of Arch.
	Debs string
}

// The users the images run as.
const (
	nonrootUID = 65532
	// caBundle is Debian's CA bundle, where Go's crypto/x509 looks first.
	caBundle = "/etc/ssl/certs/ca-certificates.crt"
)

// baseFiles are the files every image holds besides its binaries: users,
// name service order, CA certificates, a /tmp.
func baseFiles() []File {
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonrootUID, nonrootUID))},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonrootUID))},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Path: caBundle, Src: caBundle, Mode: 0o644},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/root", Dir: true, Mode: 0o700},
		{Path: "/home/nonroot", Dir: true, Mode: 0o700, UID: nonrootUID, GID: nonrootUID},
	}
}

func labels(name, version, title string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       name,
		"org.opencontainers.image.description": title,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.source":      "https://github.com/stratatrace/strata",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// Agent is the agent's image: static binary, hook files, root.
func Agent(in Inputs) (Spec, error) {
	machine, err := Machine(in.Arch)
	if err != nil {
		return Spec{}, err
	}
	bin := filepath.Join(in.BinDir, "strata-agent")
	if err := requireMachine(bin, machine); err != nil {
		return Spec{}, err
	}
	if err := requireStatic(bin); err != nil {
		return Spec{}, err
	}
	app := []File{{Path: "/usr/bin/strata-agent", Src: bin, Mode: 0o755}}
	if in.HookDir != "" {
		lib := filepath.Join(in.HookDir, "libstratahook.so")
		if err := requireMachine(lib, machine); err != nil {
			return Spec{}, err
		}
		app = append(app, File{Path: "/usr/share/strata/jvmhook/libstratahook.so", Src: lib, Mode: 0o644},
			File{Path: "/usr/share/strata/jvmhook/strata-hook.jar", Src: filepath.Join(in.HookDir, "strata-hook.jar"), Mode: 0o644})
	}
	s := agentRuntime
	s.Arch, s.Version, s.Created, s.Compression = in.Arch, in.Version, in.Created, in.Compression
	s.Layers = []Layer{{Name: "base", Files: baseFiles()}, {Name: "agent", Files: app}}
	s.Labels = labels(s.Name, in.Version, "Strata node agent: Spark block pages, NUMA and page faults (eBPF)")
	return s, nil
}

// agentRuntime and collectorRuntime are how the images run; the
// Dockerfiles must say the same (TestDockerfilesMatchSpecs).
var (
	agentRuntime = Spec{
		Name:       "strata-agent",
		Repository: "strata/agent",
		Entrypoint: []string{"/usr/bin/strata-agent"},
		User:       "0:0",
		Ports:      []string{"9464/tcp"},
		Volumes:    []string{"/var/lib/strata/spool"},
	}
	collectorRuntime = Spec{
		Name:       "strata-collector",
		Repository: "strata/collector",
		Entrypoint: []string{"/usr/bin/strata-collector"},
		User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Env:        []string{"STRATA_COLLECTOR_STORE_DIR=/var/lib/strata/collector", "STRATA_COLLECTOR_LISTEN=0.0.0.0:7070"},
		Ports:      []string{"7070/tcp", "9090/tcp"},
		Volumes:    []string{"/var/lib/strata/collector"},
	}
)

// Collector is the collector's image: the cgo binary and the Debian
// libraries it needs (this machine's, or in.Debs'), each package's
// copyright and its dpkg status entry (dpkgStatus), nonroot.
func Collector(in Inputs) (Spec, error) {
	bin := filepath.Join(in.BinDir, "strata-collector")
	var db packageDB = hostDB{}
	if in.Debs != "" {
		tree := filepath.Join(in.Debs, "root")
		if err := os.RemoveAll(tree); err != nil {
			return Spec{}, err
		}
		debs, err := openDebs(in.Debs, tree)
		if err != nil {
			return Spec{}, err
		}
		db = debs
	}
	libs, err := RuntimeLibs(bin, in.Arch, db.root())
	if err != nil {
		return Spec{}, err
	}
	pkgs, err := debianPackages(db, libs)
	if err != nil {
		return Spec{}, err
	}
	var list strings.Builder
	fmt.Fprintln(&list, "# Debian packages whose files this image holds: package version path")
	for _, p := range pkgs {
		for _, f := range p.files {
			fmt.Fprintf(&list, "%s %s %s\n", p.name, p.version, f.Path)
		}
		libs = append(libs, p.files...)
	}
	libs = append(libs, File{Path: "/usr/share/strata/packages.txt", Data: []byte(list.String()), Mode: 0o644})
	status, err := dpkgStatus(pkgs)
	if err != nil {
		return Spec{}, err
	}
	libs = dedupe(append(libs, status...))
	app := []File{
		{Path: "/usr/bin/strata-collector", Src: bin, Mode: 0o755},
		{Path: "/var/lib/strata/collector", Dir: true, Mode: 0o750, UID: nonrootUID, GID: nonrootUID},
	}
	s := collectorRuntime
	s.Arch, s.Version, s.Created, s.Compression = in.Arch, in.Version, in.Created, in.Compression
	s.Layers = []Layer{{Name: "base", Files: baseFiles()}, {Name: "runtime libraries", Files: libs}, {Name: "collector", Files: app}}
	s.Labels = labels(s.Name, in.Version, "Strata collector: ingest, store (DuckDB), queries, job heuristics")
	return s, nil
}

// requireStatic fails for a binary with an interpreter: the agent's image
// holds no libraries.
func requireStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("read %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0", bin)
		}
	}
	return nil
}

func dedupe(files []File) []File {
	seen := map[string]bool{}
	var out []File
	for _, f := range files {
		if !seen[f.Path] {
			seen[f.Path] = true
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
