// Package authn decides who may talk to Strata's network endpoints: the
// collector's gRPC services and HTTP endpoints, and the agent's HTTP
// endpoints. Both ends import it; it imports only the standard library.
//
// # Credentials
//
// A client proves who it is with one of:
//
//   - a TLS client certificate that verifies against the server's client
//     CA (mutual TLS). Its role is the first Organizational Unit of its
//     subject that names one: "agent", "client" or "collector" (`strata
//     certs` writes it; with cert-manager set subject.organizationalUnits).
//     A verified certificate without a role is refused: the CA may sign
//     certificates for other purposes.
//   - a bearer token (HTTP "Authorization: Bearer T", gRPC metadata
//     "authorization: Bearer T") listed in the server's token file. Tokens
//     have the client role. HTTP also takes the token as the password of
//     Basic authentication (any user name): a 401 challenges Bearer and
//     Basic, so a browser opening the web UI asks for it.
//
// What each role may do is the caller's table (collector/server for gRPC
// methods, Policy.HTTP for HTTP handlers): agents push batches, clients
// query and read HTTP endpoints, and every authenticated identity may ask
// for health, so a process can probe itself with its own certificate.
//
// # Token files
//
// One token per line; blank lines and lines starting with # are ignored;
// a token is at least MinTokenLen bytes with no spaces. The file is read
// again when its size or modification time changes (checked at most once
// per second), so a rotated Kubernetes Secret takes effect without a
// restart; a file that cannot be read or parsed then keeps the tokens read
// before and the error is reported by Tokens.Err. Tokens are compared as
// SHA-256 digests with crypto/subtle, against every listed token, so the
// time taken says nothing about which token nearly matched.
//
// # Certificates
//
// TLSFiles names PEM files. A server's and a client's own key pair are
// read again at the next handshake after either file changes, so a
// renewed certificate (cert-manager, say) needs no restart. CA bundles are
// read once: a new CA needs a restart (during a CA rotation, put the old
// and the new CA in one bundle).
//
// # Without credentials
//
// A Policy with no client CA and no token file authenticates nobody, unless
// Insecure is set: then every request is the "anonymous" identity with
// every role. Servers refuse to start that way on a TCP address unless the
// operator asked for it (--insecure), and log a warning when they do.
package authn
