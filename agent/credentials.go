package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// collectorCredentials returns the streamer's dial options: TLS with the
// agent's client certificate when configured, nil (the streamer's plain
// TCP) otherwise.
func collectorCredentials(cfg Config) ([]grpc.DialOption, error) {
	files, ok := cfg.collectorTLS()
	if !ok {
		return nil, nil
	}
	tcfg, err := files.ClientConfig(cfg.TLSServerName)
	if err != nil {
		return nil, fmt.Errorf("collector tls: %w", err)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tcfg))}, nil
}

// hookFiles are what executors load (strata hook-opts names them).
var hookFiles = []string{"strata-hook.jar", "libstratahook.so"}

// installHook copies the hook files from src into dst, each through a
// temporary file and a rename, so an executor starting meanwhile loads
// the old file or the new one, never half of one.
func installHook(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("install hook: %w", err)
	}
	for _, name := range hookFiles {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("install hook: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-"+filepath.Base(dst))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
