package images

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/test/testenv"
)

var (
	binMu   sync.Mutex
	binDirs = map[string]string{}
)

// binaries returns a directory with a static strata-agent and a
// strata-collector for arch: for amd64 $STRATA_BIN's (make build links the
// agent statically) or ones built here; for arm64 built here, the
// collector through the cross toolchain make deps installs (the test skips
// when it is missing).
func binaries(t *testing.T, arch string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if d, ok := binDirs[arch]; ok {
		return d
	}
	if d := os.Getenv("STRATA_BIN"); arch == "amd64" && d != "" && requireStatic(filepath.Join(d, "strata-agent")) == nil {
		binDirs[arch] = d
		return d
	}
	env := []string{"GOARCH=" + arch}
	if arch == "arm64" {
		if _, err := exec.LookPath("aarch64-linux-gnu-gcc"); err != nil {
			t.Skipf("skipping: no arm64 cross compiler (make deps installs gcc-aarch64-linux-gnu): %v", err)
		}
		env = append(env, "CC=aarch64-linux-gnu-gcc", "CXX=aarch64-linux-gnu-g++")
	}
	dir, err := os.MkdirTemp("", "strata-image-bin-"+arch)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		pkg string
		cgo string
	}{{"./cmd/strata-agent", "0"}, {"./cmd/strata-collector", "1"}} {
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+"/", b.pkg)
		cmd.Dir, cmd.Env = testenv.RepoRoot(), append(append(os.Environ(), env...), "CGO_ENABLED="+b.cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GOARCH=%s go build %s: %v\n%s", arch, b.pkg, err, out)
		}
	}
	binDirs[arch] = dir
	return dir
}

// image builds specs (one per architecture) into one index, writes its
// archive, reads it back and unpacks each platform's image: what a
// registry or a node would get. It returns the index read back and each
// architecture's unpacked file system.
func image(t *testing.T, specs ...Spec) (v1.ImageIndex, map[string]string) {
	t.Helper()
	var imgs []v1.Image
	for _, spec := range specs {
		img, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	idx, err := Index(imgs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, specs[0].Name+".tar")
	if err := WriteArchive(archive, specs[0].Reference("test"), idx, specs[0].Created); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(archive)
	t.Logf("%s: %.1f MiB", specs[0].Name, float64(st.Size())/(1<<20))
	back, ref, err := ReadArchive(archive, filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	if want := specs[0].Repository + ":test"; ref != want {
		t.Errorf("archive's ref name %q, want %q", ref, want)
	}
	want, _ := idx.Digest()
	if got, err := back.Digest(); err != nil || got != want {
		t.Fatalf("digest read back %v (%v), written %v", got, err, want)
	}
	roots := map[string]string{}
	for i, spec := range specs {
		img, err := PlatformImage(back, spec.Arch)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := img.Digest(); got != mustDigest(t, imgs[i]) {
			t.Fatalf("%s image read back %v, written %v", spec.Arch, got, mustDigest(t, imgs[i]))
		}
		roots[spec.Arch] = filepath.Join(dir, "rootfs-"+spec.Arch)
		if err := Unpack(img, roots[spec.Arch]); err != nil {
			t.Fatal(err)
		}
	}
	return back, roots
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func inputs(t *testing.T, arch string) Inputs {
	return Inputs{Arch: arch, BinDir: binaries(t, arch), Version: "test", Created: time.Unix(1700000000, 0).UTC(), Compression: gzip.BestSpeed}
}

// The agent's image: OCI media types, the entrypoint, root, the same
// digest when built twice, and its entrypoint runs from the unpacked
// image (chroot) and says its version.
func TestAgentImage(t *testing.T) {
	in := inputs(t, "amd64")
	spec, err := Agent(in)
	if err != nil {
		t.Fatal(err)
	}
	idx, roots := image(t, spec)
	root := roots["amd64"]
	img, err := PlatformImage(idx, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil || m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer media type %s", l.MediaType)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/usr/bin/strata-agent" || cf.Config.User != "0:0" || cf.OS != "linux" || cf.Architecture != "amd64" ||
		cf.Config.Labels["org.opencontainers.image.version"] != "test" || !cf.Created.Equal(in.Created) {
		t.Fatalf("config %+v", cf.Config)
	}
	again, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	if d2, _ := again.Digest(); d1 != d2 {
		t.Fatalf("two builds of the same inputs: %v and %v", d1, d2)
	}
	for _, f := range []string{"etc/passwd", "etc/ssl/certs/ca-certificates.crt", "usr/bin/strata-agent"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("image lacks %s: %v", f, err)
		}
	}
	testenv.RequireRoot(t)
	out, err := inImage(t, root, "", 0, "/usr/bin/strata-agent", "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "strata-agent ") {
		t.Fatalf("strata-agent --version in the image: %q, %v", out, err)
	}
	t.Logf("in the image: %s", strings.TrimSpace(string(out)))
}

// The collector's image: its libraries come from Debian packages it
// lists; from the unpacked image (chroot, as the image's nonroot user) it
// serves, answers gRPC health and its own probe, and stops on SIGTERM.
func TestCollectorImage(t *testing.T) {
	in := inputs(t, "amd64")
	spec, err := Collector(in)
	if err != nil {
		t.Fatal(err)
	}
	idx, roots := image(t, spec)
	root := roots["amd64"]
	img, err := PlatformImage(idx, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q", cf.Config.User)
	}
	pkgs, err := os.ReadFile(filepath.Join(root, "usr/share/strata/packages.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"libc6 ", "libstdc++6 ", "libgcc-s1 "} {
		if !strings.Contains(string(pkgs), "\n"+p) {
			t.Errorf("packages.txt lacks %s:\n%s", p, pkgs)
		}
	}
	checkDpkgStatus(t, root, installed, "libc6", "libstdc++6", "libgcc-s1")
	testenv.RequireRoot(t)
	serveCollector(t, root, cf.Config.Env, "")
}

// inImage is a command run from the unpacked image at root (chroot) as
// uid:gid, through emulator (a static qemu-user, copied into the image)
// when it is set.
func inImage(t *testing.T, root, emulator string, uid int, argv ...string) *exec.Cmd {
	t.Helper()
	if emulator != "" {
		data, err := os.ReadFile(emulator)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "emulator")); err != nil {
			if err := os.WriteFile(filepath.Join(root, "emulator"), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		argv = append([]string{"/emulator"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	return cmd
}

// serveCollector starts the collector from the unpacked image at root as
// the image's nonroot user with the image's environment: it answers gRPC
// health and its own probe, stops on SIGTERM and has written its store.
func serveCollector(t *testing.T, root string, env []string, emulator string) {
	t.Helper()
	cmd := inImage(t, root, emulator, nonrootUID, "/usr/bin/strata-collector", "--listen", "127.0.0.1:0", "--insecure", "--memory-limit", "256MB", "--threads", "1")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("collector in the image did not start: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health of the collector in the image: %v, %v\n%s", h, err, stderr.String())
	}
	probe := inImage(t, root, emulator, nonrootUID, "/usr/bin/strata-collector", "probe", "--listen", addr, "--insecure")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Errorf("probe in the image: %v %s", err, out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("collector in the image after SIGTERM: %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(root, "var/lib/strata/collector/strata.duckdb")); err != nil {
		t.Errorf("no store written by the nonroot user: %v", err)
	}
}

// The Dockerfiles, which are built elsewhere, describe the images make
// images assembles: same entrypoint, user, ports, volumes and environment.
func TestDockerfilesMatchSpecs(t *testing.T) {
	for file, want := range map[string]Spec{"agent.Dockerfile": agentRuntime, "collector.Dockerfile": collectorRuntime} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		final := false
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "FROM":
				final = !strings.Contains(l, " AS ")
			case "ENTRYPOINT":
				got.Entrypoint = strings.Split(strings.Trim(strings.Join(f[1:], ""), `[]"`), `","`)
			case "USER":
				got.User = f[1]
			case "EXPOSE":
				got.Ports = f[1:]
			case "VOLUME":
				got.Volumes = f[1:]
			case "ENV":
				if final && !strings.HasPrefix(f[1], "PATH=") {
					got.Env = append(got.Env, f[1])
				}
			}
		}
		got.Name, got.Repository = want.Name, want.Repository
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s says %+v; the assembled image %+v", file, got, want)
		}
	}
}

// showFormat is what checkDpkgStatus compares, in dpkg-query's and
// dpkg-deb's --showformat.
const showFormat = "${Package} ${Version} ${Architecture} ${source:Package}"

// installed is dpkg-query -W of pkg on this machine.
func installed(pkg, arch string) (string, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f="+showFormat, pkg+":"+arch).Output()
	return string(out), err
}

// fromDebs is dpkg-deb -W of pkg's .deb in dir.
func fromDebs(dir string) func(pkg, arch string) (string, error) {
	return func(pkg, arch string) (string, error) {
		debs, err := filepath.Glob(filepath.Join(dir, pkg+"_*_"+arch+".deb"))
		if err != nil || len(debs) != 1 {
			return "", fmt.Errorf("%s_*_%s.deb in %s: %v, %v", pkg, arch, dir, debs, err)
		}
		out, err := exec.Command("dpkg-deb", "-W", "--showformat="+showFormat, debs[0]).Output()
		return string(out), err
	}
}

// checkDpkgStatus reads the image's dpkg status entries back as a scanner
// would and compares each with what query says of the package (this
// machine's dpkg-query -W, or dpkg-deb -W of the .deb it came from): name,
// version, architecture, source; every file the image holds of the
// package is in its md5sums with the md5 of the bytes in the image, and
// the packages named in want have entries.
func checkDpkgStatus(t *testing.T, root string, query func(pkg, arch string) (string, error), want ...string) {
	t.Helper()
	dir := filepath.Join(root, "var/lib/dpkg/status.d")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f := fields(string(data))
		if f["Package"] != e.Name() || f["Status"] != "install ok installed" {
			t.Errorf("status.d/%s: Package %q, Status %q", e.Name(), f["Package"], f["Status"])
		}
		src := f["Source"]
		if src == "" {
			src = f["Package"]
		}
		src = strings.Fields(src)[0] // "gcc-12 (12.2.0-14)" names the source and its version
		got := strings.Join([]string{f["Package"], f["Version"], f["Architecture"], src}, " ")
		out, err := query(f["Package"], f["Architecture"])
		if err != nil {
			t.Fatalf("query %s:%s: %v", f["Package"], f["Architecture"], err)
		}
		if got != out {
			t.Errorf("status.d/%s says %q; the package %q", e.Name(), got, out)
		}
		sums, err := os.ReadFile(filepath.Join(dir, e.Name()+".md5sums"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
		libs := 0
		for _, l := range lines {
			sum, name, ok := strings.Cut(l, "  ")
			if !ok {
				t.Fatalf("status.d/%s.md5sums: line %q", e.Name(), l)
			}
			if got, err := md5File(filepath.Join(root, name)); err != nil || got != sum {
				t.Errorf("status.d/%s.md5sums: %s %s, the image's file %s (%v)", e.Name(), sum, name, got, err)
			}
			if strings.Contains(path.Base(name), ".so") {
				libs++
			}
		}
		if libs == 0 {
			t.Errorf("status.d/%s.md5sums lists no library: %q", e.Name(), lines)
		}
		seen[e.Name()] = true
		t.Logf("status.d/%s: %s, %d files", e.Name(), got, len(lines))
	}
	for _, p := range want {
		if !seen[p] {
			t.Errorf("no dpkg status entry for %s (have %v)", p, seen)
		}
	}
}

// hookDir returns a directory holding the hook's jar (make build's) and its
// library for arch, built by the Makefile's rule for the images.
func hookDir(t *testing.T, arch string) string {
	t.Helper()
	jar := testenv.Built(t, "jvmhook/strata-hook.jar")
	bin := t.TempDir()
	dir := filepath.Join(bin, "image", arch, "jvmhook")
	cmd := exec.Command("make", "-s", "BIN="+bin, filepath.Join(dir, "libstratahook.so"))
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make the hook's library for %s: %v\n%s", arch, err, out)
	}
	data, err := os.ReadFile(jar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "strata-hook.jar"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// arm64Debs downloads the arm64 collector's Debian packages as make images
// does (make image-debs), its apt state kept in the user's cache.
func arm64Debs(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	cmd := exec.Command("make", "-s", "BIN="+bin, "IMAGE_APT="+filepath.Join(cache, "strata", "apt-arm64"), "image-debs")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image-debs: %v\n%s", err, out)
	}
	return filepath.Join(bin, "image", "arm64", "debs")
}

// Each image's archive holds one index with a linux/amd64 and a
// linux/arm64 manifest, whose configs say the same platform; every ELF
// file an image holds is built for its platform's machine; each agent
// embeds the BPF object its architecture's loader names (go list
// EmbedFiles of agent/tracer), byte for byte.
func TestMultiArchImages(t *testing.T) {
	var agents, collectors []Spec
	emulated := map[string]string{} // image name: its unpacked arm64 file system
	var armEnv []string             // the arm64 collector's config's environment
	armDebs := arm64Debs(t)
	for _, arch := range Arches {
		in := inputs(t, arch)
		in.HookDir = hookDir(t, arch)
		if arch == "arm64" {
			in.Debs = armDebs
		}
		a, err := Agent(in)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Collector(in)
		if err != nil {
			t.Fatal(err)
		}
		agents, collectors = append(agents, a), append(collectors, c)
	}
	for _, specs := range [][]Spec{agents, collectors} {
		idx, roots := image(t, specs...)
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != types.OCIImageIndex || len(m.Manifests) != len(Arches) {
			t.Fatalf("%s: index %s with %d manifests, want %s with %d", specs[0].Name, m.MediaType, len(m.Manifests), types.OCIImageIndex, len(Arches))
		}
		for i, d := range m.Manifests {
			if d.MediaType != types.OCIManifestSchema1 || d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != Arches[i] {
				t.Errorf("%s: manifest %d: %s, platform %+v, want linux/%s", specs[0].Name, i, d.MediaType, d.Platform, Arches[i])
				continue
			}
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil || cf.OS != "linux" || cf.Architecture != Arches[i] {
				t.Fatalf("%s %s: config says %+v (%v)", specs[0].Name, Arches[i], cf, err)
			}
			if specs[0].Name == "strata-collector" && Arches[i] == "arm64" {
				armEnv = cf.Config.Env
			}
		}
		for arch, root := range roots {
			n := checkMachines(t, root, arch)
			t.Logf("%s %s: %d ELF files, all %s", specs[0].Name, arch, n, mustMachine(t, arch))
		}
		if specs[0].Name == "strata-agent" {
			for arch, root := range roots {
				checkBPFObject(t, filepath.Join(root, "usr/bin/strata-agent"), arch)
			}
		}
		emulated[specs[0].Name] = roots["arm64"]
		if specs[0].Name == "strata-collector" {
			checkDpkgStatus(t, roots["amd64"], installed, "libc6", "libstdc++6", "libgcc-s1")
			checkDpkgStatus(t, roots["arm64"], fromDebs(armDebs), "libc6", "libstdc++6", "libgcc-s1")
		}
	}
	// The arm64 entrypoints run, from their images, under qemu-user.
	testenv.RequireRoot(t)
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Skipf("skipping the arm64 runs: no qemu-aarch64-static (make deps installs qemu-user-static): %v", err)
	}
	out, err := inImage(t, emulated["strata-agent"], qemu, 0, "/usr/bin/strata-agent", "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "strata-agent ") {
		t.Fatalf("arm64 strata-agent --version in the image: %q, %v", out, err)
	}
	t.Logf("arm64 image: %s", strings.TrimSpace(string(out)))
	serveCollector(t, emulated["strata-collector"], armEnv, qemu)
}

func mustMachine(t *testing.T, arch string) elf.Machine {
	t.Helper()
	m, err := Machine(arch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkMachines fails for an ELF file under root that is not for arch's
// machine, and for an image without its entrypoint binary among them; it
// returns how many ELF files it read.
func checkMachines(t *testing.T, root, arch string) int {
	t.Helper()
	want := mustMachine(t, arch)
	n, bins := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := elf.Open(p)
		if err != nil {
			return nil // not ELF
		}
		defer f.Close()
		n++
		if strings.HasPrefix(p, filepath.Join(root, "usr/bin")+"/") || strings.HasSuffix(p, "libstratahook.so") {
			bins++
		}
		if f.Machine != want {
			t.Errorf("%s image: %s is %v, want %v", arch, strings.TrimPrefix(p, root), f.Machine, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if bins == 0 {
		t.Errorf("%s image: no binary in /usr/bin", arch)
	}
	return n
}

// checkBPFObject: the agent binary embeds the object go list names as
// agent/tracer's embedded file for GOARCH=arch.
func checkBPFObject(t *testing.T, agent, arch string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}} {{join .EmbedFiles \" \"}}", "./agent/tracer")
	cmd.Dir, cmd.Env = testenv.RepoRoot(), append(os.Environ(), "GOARCH="+arch, "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOARCH=%s go list ./agent/tracer: %v", arch, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 || !strings.HasSuffix(f[1], "_bpfel.o") {
		t.Fatalf("GOARCH=%s: agent/tracer embeds %q, want one BPF object", arch, f[1:])
	}
	want := map[string]string{"amd64": "strata_x86_bpfel.o", "arm64": "strata_arm64_bpfel.o"}[arch]
	if f[1] != want {
		t.Errorf("GOARCH=%s: agent/tracer embeds %s, want %s", arch, f[1], want)
	}
	obj, err := os.ReadFile(filepath.Join(f[0], f[1]))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(agent)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bin, obj) {
		t.Errorf("the %s agent in the image lacks %s (%d bytes)", arch, f[1], len(obj))
	}
}

// The images deploy/kubernetes/strata.yaml and the Helm chart's defaults
// pull are the ones make images writes: the repositories of the specs,
// tagged as the Makefile tags them (make -n images: mkimage's --tag), which
// is the chart's appVersion.
func TestManifestsPullTheImages(t *testing.T) {
	root := testenv.RepoRoot()
	cmd := exec.Command("make", "-n", "images")
	cmd.Dir = root
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "IMAGE_TAG=") && !strings.HasPrefix(e, "MAKEFLAGS=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n images: %v\n%s", err, out)
	}
	_, after, ok := strings.Cut(string(out), "./deploy/images/mkimage ")
	if !ok {
		t.Fatalf("make -n images runs no mkimage:\n%s", out)
	}
	var tag string
	f := strings.Fields(strings.ReplaceAll(after, "\\\n", " "))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--tag" {
			tag = f[i+1]
		}
	}
	if tag == "" {
		t.Fatalf("make -n images: mkimage without --tag: %s", after)
	}
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	readYAML(t, filepath.Join(root, "deploy/helm/strata/Chart.yaml"), &chart)
	if chart.AppVersion != tag {
		t.Errorf("make images tags %q, the chart's appVersion is %q", tag, chart.AppVersion)
	}
	type image struct{ Repository, Tag string }
	var values struct {
		Image struct {
			Registry  string
			Agent     image
			Collector image
		}
	}
	readYAML(t, filepath.Join(root, "deploy/helm/strata/values.yaml"), &values)
	want := map[string]bool{agentRuntime.Reference(tag): true, collectorRuntime.Reference(tag): true}
	for _, img := range []image{values.Image.Agent, values.Image.Collector} {
		t2 := img.Tag
		if t2 == "" {
			t2 = chart.AppVersion
		}
		if ref := values.Image.Registry + img.Repository + ":" + t2; !want[ref] {
			t.Errorf("the chart pulls %s by default; make images writes %v", ref, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes/strata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "image:" {
			got[f[1]] = true
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/kubernetes/strata.yaml pulls %v; make images writes %v", got, want)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
