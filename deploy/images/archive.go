package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index makes one multi-platform OCI image index of imgs, each manifest's
// descriptor carrying the platform (linux and the architecture) its
// config names.
func Index(imgs []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}}})
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// WriteArchive writes idx as an OCI image layout archive at path: the
// layout's index.json holds one descriptor, of idx, annotated with ref
// (org.opencontainers.image.ref.name, e.g. strata/agent:dev), so that
// `skopeo copy --all oci-archive:PATH` or `podman load` take every
// platform; the tar entries are sorted and dated created.
func WriteArchive(path, ref string, idx v1.ImageIndex, created time.Time) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".oci-")
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	var names []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	sort.Strings(names)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, n := range names {
		st, err := os.Stat(n)
		if err != nil {
			f.Close()
			return fmt.Errorf("write archive: %w", err)
		}
		rel, _ := filepath.Rel(dir, n)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: created, Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		} else {
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return fmt.Errorf("write archive: %w", err)
		}
		if !st.IsDir() {
			if err := copyInto(tw, n); err != nil {
				f.Close()
				return fmt.Errorf("write archive: %w", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("write archive: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return os.Rename(tmp, path)
}

func copyInto(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// ReadArchive unpacks the OCI layout archive at path into dir and returns
// its one image index and the ref name it is annotated with.
func ReadArchive(path, dir string) (v1.ImageIndex, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("read archive: %w", err)
	}
	defer f.Close()
	if err := untar(f, dir, false); err != nil {
		return nil, "", fmt.Errorf("read archive: %w", err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("read archive: %w", err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("read archive: %w", err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		return nil, "", fmt.Errorf("read archive: index.json holds %d descriptors, want one image index", len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", fmt.Errorf("read archive: %w", err)
	}
	return idx, m.Manifests[0].Annotations["org.opencontainers.image.ref.name"], nil
}

// PlatformImage is idx's image for linux/arch.
func PlatformImage(idx v1.ImageIndex, arch string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no linux/%s image in the index: %w", arch, ErrArch)
}

// Unpack writes img's flattened file system into dir, with the owners and
// modes the layers give (as root).
func Unpack(img v1.Image, dir string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	return untar(rc, dir, true)
}

// untar extracts r into dir; entries may not leave dir.
func untar(r io.Reader, dir string, owners bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean("/" + h.Name)
		if name == "/" {
			continue
		}
		target := filepath.Join(dir, name)
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		mode := os.FileMode(h.Mode).Perm()
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
			continue
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, tr); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		default:
			continue
		}
		if err := os.Chmod(target, mode); err != nil {
			return err
		}
		if owners {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}
