package images

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// packageDB says which Debian package a library file came from and what
// dpkg knows of that package. hostDB asks this machine's dpkg database;
// debDB reads a directory of .deb files unpacked into one tree (the
// packages of another architecture, which this machine does not install).
type packageDB interface {
	// root is where the packages' files are: "" for this machine's /.
	root() string
	// owner names the package that holds src (a file under root) and the
	// path it records for it.
	owner(src string) (pkg, recorded string, err error)
	// info is pkg's name, version, status entry and md5sums.
	info(pkg string) (pkgInfo, error)
}

type pkgInfo struct {
	name, version string
	stanza        string            // deb822 fields, Status included
	md5s          map[string]string // md5 by path, no leading slash
}

// debPackage is a Debian package and the files of it an image holds.
type debPackage struct {
	pkgInfo
	files []File
	// recorded are the files' paths in the package's records, by image path.
	recorded map[string]string
}

// debianPackages groups files by the Debian package owning each file's
// source, and adds each package's copyright file; sorted by name.
func debianPackages(db packageDB, files []File) ([]*debPackage, error) {
	byOwner := map[string]*debPackage{}
	var out []*debPackage
	for _, f := range files {
		owner, recorded, err := db.owner(f.Src)
		if err != nil {
			return nil, err
		}
		p := byOwner[owner]
		if p == nil {
			info, err := db.info(owner)
			if err != nil {
				return nil, err
			}
			p = &debPackage{pkgInfo: info, recorded: map[string]string{}}
			byOwner[owner] = p
			out = append(out, p)
			copyright := "/usr/share/doc/" + p.name + "/copyright"
			p.files = append(p.files, File{Path: copyright, Src: db.root() + copyright, Mode: 0o644})
			p.recorded[copyright] = copyright
		}
		p.files = append(p.files, f)
		p.recorded[f.Path] = recorded
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	for _, p := range out {
		sort.Slice(p.files, func(i, j int) bool { return p.files[i].Path < p.files[j].Path })
	}
	return out, nil
}

// statusFields are the fields of a package's dpkg status entry an image
// keeps: what names the package, its version and its source for a
// scanner, not its relations to packages the image lacks.
var statusFields = []string{"Package", "Status", "Priority", "Section", "Installed-Size", "Maintainer",
	"Architecture", "Multi-Arch", "Source", "Version", "Built-Using", "Description", "Homepage"}

// dpkgStatus writes, per package, the distroless layout of dpkg's
// database that image scanners read: /var/lib/dpkg/status.d/NAME, the
// package's status entry (statusFields), and NAME.md5sums, the md5 of each
// of its files the image holds at the path it holds it (dpkg's md5sums
// format). A file whose bytes differ from what the package recorded for it
// fails the build.
func dpkgStatus(pkgs []*debPackage) ([]File, error) {
	var files []File
	for _, p := range pkgs {
		var sums strings.Builder
		for _, f := range p.files {
			want, ok := p.md5s[strings.TrimPrefix(p.recorded[f.Path], "/")]
			if !ok {
				continue // recorded under another package or not at all (a path reached through a link)
			}
			got, err := md5File(f.Src)
			if err != nil {
				return nil, err
			}
			if got != want {
				return nil, fmt.Errorf("%s: md5 %s, %s recorded %s", f.Src, got, p.name, want)
			}
			fmt.Fprintf(&sums, "%s  %s\n", got, strings.TrimPrefix(f.Path, "/"))
		}
		files = append(files,
			File{Path: "/var/lib/dpkg/status.d/" + p.name, Data: []byte(filterStanza(p.stanza, statusFields)), Mode: 0o644},
			File{Path: "/var/lib/dpkg/status.d/" + p.name + ".md5sums", Data: []byte(sums.String()), Mode: 0o644})
	}
	return files, nil
}

// hostDB is this machine's dpkg database.
type hostDB struct{}

func (hostDB) root() string { return "" }

// owner tries p as given, then without and with /usr for the merged-/usr
// layout of Debian 12, whose packages record /lib paths.
func (hostDB) owner(p string) (string, string, error) {
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

func (hostDB) info(pkg string) (pkgInfo, error) {
	stanza, err := exec.Command("dpkg-query", "-s", pkg).Output()
	if err != nil {
		return pkgInfo{}, fmt.Errorf("dpkg-query -s %s: %w", pkg, err)
	}
	f := fields(string(stanza))
	p, err := exec.Command("dpkg-query", "--control-path", pkg, "md5sums").Output()
	if err != nil {
		return pkgInfo{}, fmt.Errorf("dpkg-query --control-path %s md5sums: %w", pkg, err)
	}
	sums, err := os.ReadFile(strings.TrimSpace(string(p)))
	if err != nil {
		return pkgInfo{}, fmt.Errorf("read md5sums of %s: %w", pkg, err)
	}
	return pkgInfo{name: f["Package"], version: f["Version"], stanza: string(stanza), md5s: parseMD5s(sums)}, nil
}

// debDB is a directory of .deb files, unpacked (dpkg-deb -x) into one tree.
type debDB struct {
	dir   string
	pkgs  map[string]pkgInfo
	files map[string]string // package by path (no leading slash), from its md5sums
}

// openDebs unpacks every .deb in dir into tree, which it creates.
func openDebs(dir, tree string) (*debDB, error) {
	debs, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil || len(debs) == 0 {
		return nil, fmt.Errorf("no .deb files in %s (%v)", dir, err)
	}
	db := &debDB{dir: tree, pkgs: map[string]pkgInfo{}, files: map[string]string{}}
	for _, deb := range debs {
		if out, err := exec.Command("dpkg-deb", "-x", deb, tree).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("dpkg-deb -x %s: %v: %s", deb, err, out)
		}
		control, err := exec.Command("dpkg-deb", "-f", deb).Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-deb -f %s: %w", deb, err)
		}
		sums, err := exec.Command("dpkg-deb", "-I", deb, "md5sums").Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-deb -I %s md5sums: %w", deb, err)
		}
		f := fields(string(control))
		// The entry dpkg would write on installing it: its control
		// fields with the Status of an installed package after Package.
		pkg, rest, _ := strings.Cut(string(control), "\n")
		info := pkgInfo{name: f["Package"], version: f["Version"], stanza: pkg + "\nStatus: install ok installed\n" + rest, md5s: parseMD5s(sums)}
		db.pkgs[info.name] = info
		for p := range info.md5s {
			db.files[p] = info.name
		}
	}
	return db, nil
}

func (db *debDB) root() string { return db.dir }

func (db *debDB) owner(src string) (string, string, error) {
	rel, err := filepath.Rel(db.dir, src)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", "", fmt.Errorf("%s is outside the unpacked packages %s", src, db.dir)
	}
	pkg, ok := db.files[filepath.ToSlash(rel)]
	if !ok {
		return "", "", fmt.Errorf("no package in %s holds %s", db.dir, rel)
	}
	return pkg, "/" + filepath.ToSlash(rel), nil
}

func (db *debDB) info(pkg string) (pkgInfo, error) { return db.pkgs[pkg], nil }

// fields parses a deb822 stanza's single-line fields.
func fields(stanza string) map[string]string {
	f := map[string]string{}
	for _, l := range strings.Split(stanza, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, " ") {
			f[k] = v
		}
	}
	return f
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

// parseMD5s reads dpkg's md5sums format: md5 by path.
func parseMD5s(data []byte) map[string]string {
	sums := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if sum, name, ok := strings.Cut(l, "  "); ok {
			sums[name] = sum
		}
	}
	return sums
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
