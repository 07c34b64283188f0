package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of a layer.
type File struct {
	Path string // in the image, absolute
	Src  string // file on this machine to copy; empty for Data, a directory or a link
	Data []byte
	Mode int64 // permission bits
	Dir  bool
	Link string // symlink target
	UID  int
	GID  int
}

// Layer is a named set of files.
type Layer struct {
	Name  string
	Files []File
}

// Spec describes an image for one platform.
type Spec struct {
	Name       string // strata-agent, strata-collector: the archive's file name
	Repository string // strata/agent, strata/collector: the name manifests pull
	Arch       string // GOARCH and OCI architecture: amd64, arm64
	Version    string
	Layers     []Layer
	Entrypoint []string
	User       string
	Env        []string
	Ports      []string // "7070/tcp"
	Volumes    []string
	Labels     map[string]string
	Created    time.Time
	// Compression is the gzip level of the layers (0: gzip's default).
	Compression int
}

// Reference is the image's name with tag, as manifests pull it:
// strata/agent:TAG.
func (s Spec) Reference(tag string) string { return s.Repository + ":" + tag }

// Build assembles the image of s for its architecture.
func Build(s Spec) (v1.Image, error) {
	if _, ok := platforms[s.Arch]; !ok {
		return nil, fmt.Errorf("build %s: %w: %q", s.Name, ErrArch, s.Arch)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	var history []v1.History
	for _, l := range s.Layers {
		data, err := layerTar(l.Files, s.Created)
		if err != nil {
			return nil, fmt.Errorf("build %s layer %s: %w", s.Name, l.Name, err)
		}
		level := s.Compression
		if level == 0 {
			level = gzip.DefaultCompression
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
			tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(level), tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("build %s layer %s: %w", s.Name, l.Name, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, fmt.Errorf("build %s: %w", s.Name, err)
		}
		history = append(history, v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "strata mkimage: " + l.Name})
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", s.Name, err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	cf.Created = v1.Time{Time: s.Created}
	cf.History = history
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.User = s.User
	cf.Config.Env = append([]string{"PATH=/usr/bin:/bin"}, s.Env...)
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = s.Labels
	if len(s.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.Ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	if len(s.Volumes) > 0 {
		cf.Config.Volumes = map[string]struct{}{}
		for _, v := range s.Volumes {
			cf.Config.Volumes[v] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("build %s: %w", s.Name, err)
	}
	return img, nil
}

// layerTar writes files as a tar stream: parent directories first, every
// entry dated created.
func layerTar(files []File, created time.Time) ([]byte, error) {
	dirs := map[string]File{}
	var entries []File
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("path %q is not absolute", f.Path)
		}
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = File{Path: d, Dir: true, Mode: 0o755}
			}
		}
		if f.Dir {
			dirs[f.Path] = f
			continue
		}
		entries = append(entries, f)
	}
	for _, d := range dirs {
		entries = append(entries, d)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range entries {
		h := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Uid: f.UID, Gid: f.GID,
			ModTime: created, Format: tar.FormatPAX}
		var body []byte
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, body = tar.TypeReg, f.Data
			if f.Src != "" {
				b, err := os.ReadFile(f.Src)
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", f.Src, err)
				}
				body = b
			}
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// platform is what an architecture's images need from the build machine.
type platform struct {
	machine elf.Machine
	// libDir is where the image holds the shared libraries (Debian's
	// multiarch directory).
	libDir string
	// search is where this machine holds that architecture's libraries
	// when RuntimeLibs is given no root: the native ones for amd64, the
	// Debian cross packages' (libc6-arm64-cross, ...) for arm64.
	search []string
}

var platforms = map[string]platform{
	"amd64": {elf.EM_X86_64, "/lib/x86_64-linux-gnu",
		[]string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}},
	"arm64": {elf.EM_AARCH64, "/lib/aarch64-linux-gnu",
		[]string{"/usr/aarch64-linux-gnu/lib", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}},
}

// Arches are the architectures images are built for.
var Arches = []string{"amd64", "arm64"}

// ErrArch is returned for an architecture without a platform entry or a
// binary built for another one.
var ErrArch = errors.New("wrong or unknown architecture")

// Machine is the ELF machine of arch's binaries.
func Machine(arch string) (elf.Machine, error) {
	p, ok := platforms[arch]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrArch, arch)
	}
	return p.machine, nil
}

// ErrStatic is returned by RuntimeLibs for a binary without an interpreter.
var ErrStatic = errors.New("binary is statically linked")

// RuntimeLibs returns the shared libraries binary, built for arch, needs to
// start: its interpreter and the closure of DT_NEEDED, as found on this
// machine (root empty) or in the multiarch directories under root (the
// packages of arch unpacked there), each at the path the image will hold
// it (the interpreter at its PT_INTERP path, the others in the platform's
// multiarch directory). Every library must be an ELF file of arch's
// machine.
func RuntimeLibs(binary, arch, root string) ([]File, error) {
	plat, ok := platforms[arch]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrArch, arch)
	}
	if root != "" {
		plat.search = []string{root + plat.libDir, root + "/usr" + plat.libDir}
	}
	if err := requireMachine(binary, plat.machine); err != nil {
		return nil, err
	}
	interp, needed, err := elfDeps(binary)
	if err != nil {
		return nil, err
	}
	if interp == "" {
		return nil, fmt.Errorf("%s: %w", binary, ErrStatic)
	}
	src, err := findLib(plat, path.Base(interp))
	if err != nil {
		return nil, fmt.Errorf("find interpreter: %w", err)
	}
	files := []File{{Path: interp, Src: src, Mode: 0o755}}
	seen := map[string]bool{}
	for len(needed) > 0 {
		name := needed[0]
		needed = needed[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		src, err := findLib(plat, name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: plat.libDir + "/" + name, Src: src, Mode: 0o755})
		_, more, err := elfDeps(src)
		if err != nil {
			return nil, err
		}
		needed = append(needed, more...)
	}
	return files, nil
}

// requireMachine fails unless p is an ELF file for machine.
func requireMachine(p string, machine elf.Machine) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("read elf: %w", err)
	}
	defer f.Close()
	if f.Machine != machine {
		return fmt.Errorf("%s is %v, want %v: %w", p, f.Machine, machine, ErrArch)
	}
	return nil
}

func elfDeps(p string) (interp string, needed []string, err error) {
	f, err := elf.Open(p)
	if err != nil {
		return "", nil, fmt.Errorf("read elf: %w", err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b, err := io.ReadAll(prog.Open())
			if err != nil {
				return "", nil, fmt.Errorf("read interpreter: %w", err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err = f.ImportedLibraries()
	if err != nil {
		return "", nil, fmt.Errorf("read dynamic section: %w", err)
	}
	return interp, needed, nil
}

// findLib is the first of plat's search directories holding name, as the
// file the name resolves to, when it is a library of plat's machine.
func findLib(plat platform, name string) (string, error) {
	for _, d := range plat.search {
		real, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err != nil {
			continue
		}
		if requireMachine(real, plat.machine) == nil {
			return real, nil
		}
	}
	return "", fmt.Errorf("shared library %s for %v not found in %v", name, plat.machine, plat.search)
}
