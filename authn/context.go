package authn

import "context"

type identityKey struct{}

func withIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// WithIdentity returns ctx carrying id (for servers other than Policy.HTTP
// that authenticate, such as the collector's gRPC interceptors).
func WithIdentity(ctx context.Context, id Identity) context.Context { return withIdentity(ctx, id) }

// IdentityFrom returns the identity a request was authenticated as.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// BearerToken is a client's token. As gRPC per-RPC credentials (it has
// the methods of credentials.PerRPCCredentials) it sends "authorization:
// Bearer T" with every call, and only over TLS unless AllowPlaintext.
type BearerToken struct {
	Token          string
	AllowPlaintext bool
}

// GetRequestMetadata returns the authorization metadata.
func (b BearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Token}, nil
}

// RequireTransportSecurity keeps the token off plain connections unless
// AllowPlaintext.
func (b BearerToken) RequireTransportSecurity() bool { return !b.AllowPlaintext }
