package images

import (
	"crypto/md5"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
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
// libraries it needs, each package's copyright and its dpkg status entry
// (Status), nonroot.
func Collector(in Inputs) (Spec, error) {
	bin := filepath.Join(in.BinDir, "strata-collector")
	libs, err := RuntimeLibs(bin, in.Arch)
	if err != nil {
		return Spec{}, err
	}
	pkgs, err := debianPackages(libs)
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

// debPackage is an installed Debian package and the files of it an image
// holds.
type debPackage struct {
	owner   string // as dpkg names it: libc6:amd64, libc6-arm64-cross
	name    string // libc6
	version string
	files   []File
	// dpkgPaths are the files' paths in dpkg's database, by image path.
	dpkgPaths map[string]string
}

// debianPackages groups files by the Debian package (and its installed
// version) owning each file's source, through dpkg, and adds each
// package's copyright file; sorted by name.
func debianPackages(files []File) ([]*debPackage, error) {
	byOwner := map[string]*debPackage{}
	var out []*debPackage
	for _, f := range files {
		owner, dpkgPath, err := dpkgOwner(f.Src)
		if err != nil {
			return nil, err
		}
		p := byOwner[owner]
		if p == nil {
			ver, err := exec.Command("dpkg-query", "-W", "-f=${Version}", owner).Output()
			if err != nil {
				return nil, fmt.Errorf("dpkg-query %s: %w", owner, err)
			}
			p = &debPackage{owner: owner, name: strings.SplitN(owner, ":", 2)[0], version: string(ver), dpkgPaths: map[string]string{}}
			byOwner[owner] = p
			out = append(out, p)
			copyright := "/usr/share/doc/" + p.name + "/copyright"
			p.files = append(p.files, File{Path: copyright, Src: copyright, Mode: 0o644})
			p.dpkgPaths[copyright] = copyright
		}
		p.files = append(p.files, f)
		p.dpkgPaths[f.Path] = dpkgPath
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	for _, p := range out {
		sort.Slice(p.files, func(i, j int) bool { return p.files[i].Path < p.files[j].Path })
	}
	return out, nil
}

// dpkgOwner is the package that installed path and the path dpkg records
// (tried as given, then without and with /usr for the merged-/usr layout
// of Debian 12).
func dpkgOwner(p string) (owner, dpkgPath string, err error) {
	var last error
	for _, c := range []string{p, strings.TrimPrefix(p, "/usr"), path.Join("/usr", p)} {
		out, err := exec.Command("dpkg", "-S", c).Output()
		if err != nil {
			last = err
			continue
		}
		line := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		owner, _, ok := strings.Cut(line, ": ")
		if ok && !strings.Contains(owner, ",") {
			return owner, c, nil
		}
	}
	return "", "", fmt.Errorf("find the Debian package of %s (dpkg -S): %w", p, last)
}

// statusFields are the fields of a package's dpkg status entry an image
// keeps: what names the package, its version and its source for a
// scanner, not its relations to packages the image lacks.
var statusFields = []string{"Package", "Status", "Priority", "Section", "Installed-Size", "Maintainer",
	"Architecture", "Multi-Arch", "Source", "Version", "Built-Using", "Description", "Homepage"}

// dpkgStatus writes, per package, the distroless layout of dpkg's
// database that image scanners read: /var/lib/dpkg/status.d/NAME, the
// package's status entry (statusFields, as this machine's dpkg holds
// them), and NAME.md5sums, the md5 of each of its files the image holds at
// the path it holds it (dpkg's md5sums format). A file whose bytes differ
// from what dpkg recorded for it fails the build.
func dpkgStatus(pkgs []*debPackage) ([]File, error) {
	var files []File
	for _, p := range pkgs {
		out, err := exec.Command("dpkg-query", "-s", p.owner).Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-query -s %s: %w", p.owner, err)
		}
		entry := filterStanza(string(out), statusFields)
		recorded, err := dpkgMD5s(p.owner)
		if err != nil {
			return nil, err
		}
		var sums strings.Builder
		for _, f := range p.files {
			if f.Src == "" || f.Link != "" {
				continue
			}
			want, ok := recorded[strings.TrimPrefix(p.dpkgPaths[f.Path], "/")]
			if !ok {
				continue // dpkg records no md5 for it (a path reached through a link)
			}
			got, err := md5File(f.Src)
			if err != nil {
				return nil, err
			}
			if got != want {
				return nil, fmt.Errorf("%s: md5 %s, dpkg recorded %s for %s", f.Src, got, want, p.owner)
			}
			fmt.Fprintf(&sums, "%s  %s\n", got, strings.TrimPrefix(f.Path, "/"))
		}
		files = append(files,
			File{Path: "/var/lib/dpkg/status.d/" + p.name, Data: []byte(entry), Mode: 0o644},
			File{Path: "/var/lib/dpkg/status.d/" + p.name + ".md5sums", Data: []byte(sums.String()), Mode: 0o644})
	}
	return files, nil
}

// filterStanza keeps the fields of a deb822 stanza named in keep (with
// their continuation lines), in the stanza's order.
func filterStanza(stanza string, keep []string) string {
	want := map[string]bool{}
	for _, k := range keep {
		want[k] = true
	}
	var b strings.Builder
	on := false
	for _, l := range strings.Split(strings.TrimRight(stanza, "\n"), "\n") {
		if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			name, _, _ := strings.Cut(l, ":")
			on = want[name]
		}
		if on {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// dpkgMD5s reads the md5sums dpkg holds for owner: md5 by path (no
// leading slash).
func dpkgMD5s(owner string) (map[string]string, error) {
	p, err := exec.Command("dpkg-query", "--control-path", owner, "md5sums").Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query --control-path %s md5sums: %w", owner, err)
	}
	data, err := os.ReadFile(strings.TrimSpace(string(p)))
	if err != nil {
		return nil, fmt.Errorf("read md5sums of %s: %w", owner, err)
	}
	sums := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		sum, name, ok := strings.Cut(l, "  ")
		if ok {
			sums[name] = sum
		}
	}
	return sums, nil
}

func md5File(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
