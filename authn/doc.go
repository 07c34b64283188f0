// Package authn decides who may talk to Strata's network endpoints: the
// collector's gRPC services and HTTP endpoints, and the agent's HTTP
// endpoints. Both ends import it; it imports only the standard library. A
// Policy authenticates a peer by a TLS client certificate verified against
// the server's client CA (its role, agent, client or collector, is the
// first Organizational Unit of its subject that names one) or by a bearer
// token from a token file (role client; HTTP also accepts it as a Basic
// password). The resulting Identity travels in the request's context
// (WithIdentity, IdentityFrom); what each role may do is the caller's
// table, and Policy.HTTP applies it to an HTTP handler.
//
// What callers must know: a verified certificate without a role is
// refused (ErrNoRole), a peer without valid credentials is
// ErrUnauthenticated, a role that may not call is ErrForbidden. Token files (one token per line, # comments, at least
// MinTokenLen bytes) and a server's or client's own key pair (TLSFiles) are
// read again when they change, so rotation needs no restart; a token file
// that then fails to parse keeps the tokens read before (Tokens.Err
// reports why). CA bundles are read once: a new CA needs a restart. Tokens
// are compared in constant time. A Policy with no client CA and no token
// file authenticates nobody unless Insecure is set, which makes every peer
// the "anonymous" identity with every role.
//
// ExamplePolicy_Authenticate authenticates a bearer token. docs/collector.md#authn
// describes credentials, token files, certificate reloading and running
// without credentials in full.
package authn
