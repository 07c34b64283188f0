// Command mkimage writes Strata's OCI image archives (make images): see
// package deploy/images.
//
//	go run ./deploy/images/mkimage --bin DIR [--arch amd64,arm64] [--debs arm64] --tag T --version V --out DIR
//
// DIR/ARCH holds, per architecture, strata-agent (static), strata-collector
// and jvmhook/ (strata-hook.jar, libstratahook.so), and for the --debs
// architectures debs/, the .deb files of the collector's libraries. Each
// archive holds one image index with a manifest per architecture.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/stratatrace/strata/deploy/images"
)

func main() {
	fs := flag.NewFlagSet("mkimage", flag.ExitOnError)
	bin := fs.String("bin", "bin/image", "directory holding one directory per architecture: strata-agent (static), strata-collector, jvmhook/")
	arches := fs.String("arch", strings.Join(images.Arches, ","), "architectures of both images, comma-separated")
	debs := fs.String("debs", "", "architectures whose collector takes its libraries from DIR/ARCH/debs/*.deb, comma-separated (the others: this machine's packages)")
	hook := fs.Bool("hook", true, "put ARCH/jvmhook's strata-hook.jar and libstratahook.so in the agent's image")
	tag := fs.String("tag", "dev", "the images' tag (strata/agent:TAG)")
	version := fs.String("version", "dev", "the version label")
	out := fs.String("out", "bin/images", "directory for the archives")
	fs.Parse(os.Args[1:])
	if err := images.CheckTag(*tag, *version); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(2)
	}
	// Reproducible: the images are dated SOURCE_DATE_EPOCH when set.
	created := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkimage: SOURCE_DATE_EPOCH:", err)
			os.Exit(2)
		}
		created = time.Unix(sec, 0).UTC()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	for _, make := range []func(images.Inputs) (images.Spec, error){images.Agent, images.Collector} {
		var specs []images.Spec
		for _, arch := range strings.Split(*arches, ",") {
			in := images.Inputs{Arch: arch, BinDir: filepath.Join(*bin, arch), Version: *version, Created: created}
			if *hook {
				in.HookDir = filepath.Join(*bin, arch, "jvmhook")
			}
			if slices.Contains(strings.Split(*debs, ","), arch) {
				in.Debs = filepath.Join(*bin, arch, "debs")
			}
			spec, err := make(in)
			if err != nil {
				fmt.Fprintln(os.Stderr, "mkimage:", err)
				os.Exit(1)
			}
			specs = append(specs, spec)
		}
		if err := write(specs, *tag, *out, created); err != nil {
			fmt.Fprintln(os.Stderr, "mkimage:", err)
			os.Exit(1)
		}
	}
}

// write builds specs, one image per architecture, into one archive.
func write(specs []images.Spec, tag, out string, created time.Time) error {
	var imgs []v1.Image
	for _, s := range specs {
		img, err := images.Build(s)
		if err != nil {
			return err
		}
		imgs = append(imgs, img)
	}
	idx, err := images.Index(imgs)
	if err != nil {
		return err
	}
	path := filepath.Join(out, specs[0].Name+".tar")
	ref := specs[0].Reference(tag)
	if err := images.WriteArchive(path, ref, idx, created); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Printf("%s  %s  %s  %.1f MiB\n", path, ref, d, float64(st.Size())/(1<<20))
	return nil
}
