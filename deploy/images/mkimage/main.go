// Command mkimage writes Strata's OCI image archives (make images): see
// package deploy/images.
//
//	go run ./deploy/images/mkimage --bin DIR [--hook DIR] --version V --out DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/stratatrace/strata/deploy/images"
)

func main() {
	in := images.Inputs{}
	fs := flag.NewFlagSet("mkimage", flag.ExitOnError)
	fs.StringVar(&in.BinDir, "bin", "bin/image", "directory holding strata-agent (static) and strata-collector")
	fs.StringVar(&in.HookDir, "hook", "", "directory holding strata-hook.jar and libstratahook.so (empty: none in the agent image)")
	fs.StringVar(&in.Version, "version", "dev", "version label and tag")
	out := fs.String("out", "bin/images", "directory for the archives")
	fs.Parse(os.Args[1:])
	// Reproducible: the images are dated SOURCE_DATE_EPOCH when set.
	in.Created = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkimage: SOURCE_DATE_EPOCH:", err)
			os.Exit(2)
		}
		in.Created = time.Unix(sec, 0).UTC()
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	for _, make := range []func(images.Inputs) (images.Spec, error){images.Agent, images.Collector} {
		spec, err := make(in)
		if err == nil {
			err = write(spec, *out, in.Created)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkimage:", err)
			os.Exit(1)
		}
	}
}

func write(spec images.Spec, out string, created time.Time) error {
	img, err := images.Build(spec)
	if err != nil {
		return err
	}
	path := filepath.Join(out, spec.Name+".tar")
	if err := images.WriteArchive(path, spec.Name+":"+spec.Version, img, created); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Printf("%s  %s  %.1f MiB\n", path, d, float64(st.Size())/(1<<20))
	return nil
}
