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

// Spec describes an image.
type Spec struct {
	Name       string // strata-agent, strata-collector
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

// Build assembles the image of s.
func Build(s Spec) (v1.Image, error) {
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
	cf.Architecture, cf.OS = "amd64", "linux"
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

// libDirs are where the runtime libraries are looked for, as ld.so's
// default search on Debian amd64.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// ErrStatic is returned by RuntimeLibs for a binary without an interpreter.
var ErrStatic = errors.New("binary is statically linked")

// RuntimeLibs returns the shared libraries binary needs to start: its
// interpreter and the closure of DT_NEEDED, as found on this machine,
// each at the path the image will hold it (the interpreter at its PT_INTERP
// path, the others in /lib/x86_64-linux-gnu).
func RuntimeLibs(binary string) ([]File, error) {
	interp, needed, err := elfDeps(binary)
	if err != nil {
		return nil, err
	}
	if interp == "" {
		return nil, fmt.Errorf("%s: %w", binary, ErrStatic)
	}
	real, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("resolve interpreter: %w", err)
	}
	files := []File{{Path: interp, Src: real, Mode: 0o755}}
	seen := map[string]bool{}
	for len(needed) > 0 {
		name := needed[0]
		needed = needed[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		src, err := findLib(name)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: "/lib/x86_64-linux-gnu/" + name, Src: src, Mode: 0o755})
		_, more, err := elfDeps(src)
		if err != nil {
			return nil, err
		}
		needed = append(needed, more...)
	}
	return files, nil
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

func findLib(name string) (string, error) {
	for _, d := range libDirs {
		p := filepath.Join(d, name)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return real, nil
		}
	}
	return "", fmt.Errorf("shared library %s not found in %v", name, libDirs)
}
