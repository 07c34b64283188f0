package images

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/test/testenv"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries returns a directory with a static strata-agent and a
// strata-collector: $STRATA_BIN's (make build links the agent statically)
// or ones built here.
func binaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if d := os.Getenv("STRATA_BIN"); d != "" && requireStatic(filepath.Join(d, "strata-agent")) == nil {
			binDir = d
			return
		}
		if binDir, binErr = os.MkdirTemp("", "strata-image-bin"); binErr != nil {
			return
		}
		for _, b := range []struct {
			pkg string
			cgo string
		}{{"./cmd/strata-agent", "0"}, {"./cmd/strata-collector", "1"}} {
			cmd := exec.Command("go", "build", "-o", binDir+"/", b.pkg)
			cmd.Dir, cmd.Env = testenv.RepoRoot(), append(os.Environ(), "CGO_ENABLED="+b.cgo)
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = err
				t.Logf("go build %s: %s", b.pkg, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// image builds spec, writes its archive, reads it back and unpacks it:
// what a registry or a node would get.
func image(t *testing.T, spec Spec) (v1.Image, string) {
	t.Helper()
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, spec.Name+".tar")
	if err := WriteArchive(archive, spec.Name+":test", img, spec.Created); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(archive)
	t.Logf("%s: %.1f MiB", spec.Name, float64(st.Size())/(1<<20))
	back, err := ReadArchive(archive, filepath.Join(dir, "layout"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, err := back.Digest(); err != nil || got != want {
		t.Fatalf("digest read back %v (%v), written %v", got, err, want)
	}
	root := filepath.Join(dir, "rootfs")
	if err := Unpack(back, root); err != nil {
		t.Fatal(err)
	}
	return back, root
}

func inputs(t *testing.T) Inputs {
	return Inputs{BinDir: binaries(t), Version: "test", Created: time.Unix(1700000000, 0).UTC(), Compression: gzip.BestSpeed}
}

// The agent's image: OCI media types, the entrypoint, root, the same
// digest when built twice, and its entrypoint runs from the unpacked
// image (chroot) and says its version.
func TestAgentImage(t *testing.T) {
	in := inputs(t)
	spec, err := Agent(in)
	if err != nil {
		t.Fatal(err)
	}
	img, root := image(t, spec)
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
	if strings.Join(cf.Config.Entrypoint, " ") != "/usr/bin/strata-agent" || cf.Config.User != "0:0" || cf.OS != "linux" ||
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
	cmd := exec.Command("/usr/bin/strata-agent", "--version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "strata-agent ") {
		t.Fatalf("strata-agent --version in the image: %q, %v", out, err)
	}
	t.Logf("in the image: %s", strings.TrimSpace(string(out)))
}

// The collector's image: its libraries come from Debian packages it
// lists; from the unpacked image (chroot, as the image's nonroot user) it
// serves, answers gRPC health and its own probe, and stops on SIGTERM.
func TestCollectorImage(t *testing.T) {
	in := inputs(t)
	spec, err := Collector(in)
	if err != nil {
		t.Fatal(err)
	}
	img, root := image(t, spec)
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
	testenv.RequireRoot(t)
	cmd := exec.Command("/usr/bin/strata-collector", "--listen", "127.0.0.1:0", "--insecure", "--memory-limit", "256MB", "--threads", "1")
	cmd.Env = cf.Config.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: nonrootUID, Gid: nonrootUID}}
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health of the collector in the image: %v, %v\n%s", h, err, stderr.String())
	}
	probe := exec.Command("/usr/bin/strata-collector", "probe", "--listen", addr, "--insecure")
	probe.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: nonrootUID, Gid: nonrootUID}}
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
		got.Name = want.Name
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s says %+v; the assembled image %+v", file, got, want)
		}
	}
}
