package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/stratatrace/strata/authn"
)

// ErrNotServing is Probe's answer when the collector answers but does not
// serve (store writes failing, shutting down).
var ErrNotServing = errors.New("collector not serving")

// Probe asks the collector configured by c, on this machine, for its
// health, with the collector's own credentials: its certificate as a
// client certificate (it has the collector role, which may ask for health)
// or the first token of its token file. The server must present the
// collector's own certificate. It is the container's liveness and
// readiness check (`strata-collector probe`): Kubernetes' gRPC probes
// cannot speak TLS.
func Probe(ctx context.Context, c Config) error {
	target, err := probeTarget(c.Listen)
	if err != nil {
		return err
	}
	var opts []grpc.DialOption
	if c.TLSCert == "" {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		cfg, err := selfTLS(c.Ops)
		if err != nil {
			return err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}
	if c.TokenFile != "" {
		toks, err := authn.LoadTokens(c.TokenFile)
		if err != nil {
			return err
		}
		tok, err := toks.First()
		if err != nil {
			return err
		}
		opts = append(opts, grpc.WithPerRPCCredentials(authn.BearerToken{Token: tok, AllowPlaintext: c.TLSCert == ""}))
	}
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return fmt.Errorf("probe %s: %w", target, err)
	}
	defer cc.Close()
	res, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("probe %s: %w", target, err)
	}
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("probe %s: %w: %v", target, ErrNotServing, res.GetStatus())
	}
	return nil
}

// probeTarget is the gRPC target of the listen address from this machine:
// an unspecified host becomes loopback.
func probeTarget(listen string) (string, error) {
	if path, ok := strings.CutPrefix(listen, "unix:"); ok {
		return "unix://" + path, nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("probe: listen address: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port), nil
}

// selfTLS is the probe's TLS: the collector's own key pair as the client
// certificate when clients must present one, and the server accepted only
// if it presents that same certificate.
func selfTLS(o Ops) (*tls.Config, error) {
	if o.TLSClientCA == "" {
		return authn.SelfTLS(o.TLSCert, o.TLSKey, "", "")
	}
	return authn.SelfTLS(o.TLSCert, o.TLSKey, o.TLSCert, o.TLSKey)
}
