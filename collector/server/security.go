package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/stratatrace/strata/authn"
	stratav1 "github.com/stratatrace/strata/proto/strata/v1"
)

// methodRoles is the role each gRPC service needs; the first prefix that
// matches a method wins, and a method of no listed service needs the
// client role. Health is open to every authenticated identity, so an
// agent, a user or the collector itself (its probe) may ask.
var methodRoles = []struct {
	prefix string
	role   authn.Role
}{
	{"/" + healthpb.Health_ServiceDesc.ServiceName + "/", authn.RoleAny},
	{"/" + stratav1.IngestService_ServiceDesc.ServiceName + "/", authn.RoleAgent},
	{"/" + stratav1.QueryService_ServiceDesc.ServiceName + "/", authn.RoleClient},
}

func roleOf(method string) authn.Role {
	for _, m := range methodRoles {
		if strings.HasPrefix(method, m.prefix) {
			return m.role
		}
	}
	return authn.RoleClient
}

// security is how the collector authenticates: the policy, the TLS
// configuration of its listeners (nil: plain TCP), and a counter of
// refusals.
type security struct {
	policy *authn.Policy
	tls    *tls.Config
	log    *slog.Logger
	denied func(endpoint string, err error)
}

// newSecurity builds the collector's security from its settings. With a
// client CA and no token file, a client certificate is required at the
// TLS handshake; with both, it is checked when given and tokens are the
// other way in.
func newSecurity(o Ops, log *slog.Logger, denied func(string, error)) (*security, error) {
	s := &security{policy: &authn.Policy{Insecure: o.Insecure}, log: log.With("component", "authn"), denied: denied}
	if o.TokenFile != "" {
		toks, err := authn.LoadTokens(o.TokenFile)
		if err != nil {
			return nil, err
		}
		s.policy.Tokens = toks
	}
	if o.TLSCert != "" {
		cfg, err := o.tlsFiles().ServerConfig(o.TokenFile == "")
		if err != nil {
			return nil, err
		}
		s.tls = cfg
	}
	switch {
	case o.Insecure:
		s.log.Warn("serving without authentication (--insecure): anyone who reaches the collector may read PFNs and push batches")
	case o.TokenFile != "" && o.TLSCert == "":
		s.log.Warn("bearer tokens over plain TCP: set --tls-cert and --tls-key so tokens are not sent in the clear")
	}
	return s, nil
}

// authenticate returns the identity of a gRPC call's peer. A peer on a
// Unix socket is authenticated by the socket file's mode (0600: the
// collector's user and root) and may do everything.
func (s *security) authenticate(ctx context.Context) (authn.Identity, error) {
	p, _ := peer.FromContext(ctx)
	if p != nil {
		if _, ok := p.Addr.(*net.UnixAddr); ok {
			return authn.Identity{Name: "unix socket", Method: "unix"}, nil
		}
	}
	var state *tls.ConnectionState
	if p != nil {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			state = &ti.State
		}
	}
	var auth string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			auth = v[0]
		}
	}
	return s.policy.Authenticate(state, auth)
}

// authorize authenticates the call and checks the method's role.
func (s *security) authorize(ctx context.Context, method string) (context.Context, error) {
	id, err := s.authenticate(ctx)
	if err == nil && !id.Allows(roleOf(method)) {
		err = fmt.Errorf("%w: %s %q may not call %s (needs role %s)", authn.ErrForbidden, id.Method, id.Name, method, roleOf(method))
	}
	if err != nil {
		s.denied("grpc", err)
		s.log.Debug("call refused", "method", method, "error", err)
		return ctx, err
	}
	return authn.WithIdentity(ctx, id), nil
}

func (s *security) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := s.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *security) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := s.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, &identityStream{ServerStream: ss, ctx: ctx})
}

// identityStream carries the authenticated identity in its context.
type identityStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *identityStream) Context() context.Context { return s.ctx }
