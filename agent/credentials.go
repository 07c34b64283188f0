package agent

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/stratatrace/strata/agent/config"
)

// collectorCredentials returns the streamer's dial options: TLS with the
// agent's client certificate when configured, nil (the streamer's plain
// TCP) otherwise.
func collectorCredentials(cfg config.Config) ([]grpc.DialOption, error) {
	files, ok := cfg.CollectorTLS()
	if !ok {
		return nil, nil
	}
	tcfg, err := files.ClientConfig(cfg.TLSServerName)
	if err != nil {
		return nil, fmt.Errorf("collector tls: %w", err)
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tcfg))}, nil
}
