package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Role is what an identity may do.
type Role string

// The roles a certificate's Organizational Unit may name.
const (
	RoleAgent     Role = "agent"     // a node agent: pushes batches
	RoleClient    Role = "client"    // a user, the CLI, Prometheus, the web UI: queries and reads
	RoleCollector Role = "collector" // a collector, probing itself
	// RoleAny is no role: what health endpoints require of an identity.
	RoleAny Role = ""
)

// Roles lists the roles a certificate may carry, in the order checked.
var Roles = []Role{RoleAgent, RoleClient, RoleCollector}

// Identity is an authenticated peer.
type Identity struct {
	Name   string // certificate common name, "token #N", "unix socket" or "anonymous"
	Method string // "certificate", "token", "unix" or "insecure"
	Role   Role   // RoleAny for unix and insecure identities, which may do everything
}

// Allows reports whether id may act in role r.
func (id Identity) Allows(r Role) bool {
	switch {
	case r == RoleAny:
		return true
	case id.Method == "insecure" || id.Method == "unix":
		return true
	}
	return id.Role == r
}

// Errors of Authenticate and of the HTTP middleware.
var (
	ErrUnauthenticated = errors.New("no valid credentials")
	ErrNoRole          = errors.New("certificate names no Strata role (OU agent, client or collector)")
	ErrForbidden       = errors.New("role may not do this")
)

// Policy authenticates peers.
type Policy struct {
	// Tokens are the accepted bearer tokens; nil accepts none.
	Tokens *Tokens
	// Insecure makes a peer without credentials the anonymous identity,
	// which may do everything. For development only.
	Insecure bool
}

// Authenticate returns the identity of a peer that came over the TLS
// connection state (nil for plain TCP) with the authorization header or
// metadata value (empty when none was sent). A verified client certificate
// wins over a token.
func (p *Policy) Authenticate(state *tls.ConnectionState, authorization string) (Identity, error) {
	if state != nil && len(state.VerifiedChains) > 0 && len(state.VerifiedChains[0]) > 0 {
		return certIdentity(state.VerifiedChains[0][0])
	}
	if tok, ok := bearer(authorization); ok {
		if i, ok := p.Tokens.Match(tok); ok {
			return Identity{Name: fmt.Sprintf("token #%d", i+1), Method: "token", Role: RoleClient}, nil
		}
		return Identity{}, fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
	}
	if p.Insecure {
		return Identity{Name: "anonymous", Method: "insecure"}, nil
	}
	return Identity{}, ErrUnauthenticated
}

// certIdentity reads the role of a verified leaf certificate.
func certIdentity(c *x509.Certificate) (Identity, error) {
	for _, ou := range c.Subject.OrganizationalUnit {
		for _, r := range Roles {
			if strings.EqualFold(ou, string(r)) {
				return Identity{Name: c.Subject.CommonName, Method: "certificate", Role: r}, nil
			}
		}
	}
	return Identity{}, fmt.Errorf("%w: %q", ErrNoRole, c.Subject.CommonName)
}

// bearer returns the token of "Bearer T", or of "Basic base64(user:T)":
// a browser's login prompt sends that, with any user name and the token
// as the password.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	switch {
	case !ok:
		return "", false
	case strings.EqualFold(scheme, "bearer"):
		return tok, tok != ""
	case strings.EqualFold(scheme, "basic"):
		raw, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			return "", false
		}
		_, pass, ok := strings.Cut(string(raw), ":")
		return pass, ok && pass != ""
	}
	return "", false
}

// HTTP wraps h so that only identities allowed role reach it. A request
// without valid credentials gets 401 with a Bearer challenge, one whose
// identity lacks the role 403; denied is told of each refusal (for a
// counter; nil for none). The identity reaches h through the request's
// context (IdentityFrom).
func (p *Policy) HTTP(role Role, h http.Handler, denied func(r *http.Request, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := p.Authenticate(r.TLS, r.Header.Get("Authorization"))
		if err == nil && !id.Allows(role) {
			err = fmt.Errorf("%w: %s %s needs role %s", ErrForbidden, id.Method, id.Name, role)
		}
		if err != nil {
			if denied != nil {
				denied(r, err)
			}
			if errors.Is(err, ErrForbidden) || errors.Is(err, ErrNoRole) {
				http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
				return
			}
			// Basic too, so a browser asks for the token (as password).
			w.Header().Add("WWW-Authenticate", `Bearer realm="strata"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="strata", charset="UTF-8"`)
			http.Error(w, "unauthorized: present a client certificate or a bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	})
}
