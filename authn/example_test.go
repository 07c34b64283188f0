package authn_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stratatrace/strata/authn"
)

// A server with a token file authenticates a bearer token as the client
// role and refuses a request without credentials.
func ExamplePolicy_Authenticate() {
	dir, err := os.MkdirTemp("", "authn")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tokens")
	tok, err := authn.NewToken()
	if err != nil {
		panic(err)
	}
	if err := authn.WriteToken(path, tok); err != nil {
		panic(err)
	}
	tokens, err := authn.LoadTokens(path)
	if err != nil {
		panic(err)
	}
	p := &authn.Policy{Tokens: tokens}

	id, err := p.Authenticate(nil, "Bearer "+tok)
	fmt.Println(id.Name, id.Method, id.Role, id.Allows(authn.RoleClient), id.Allows(authn.RoleAgent), err)
	_, err = p.Authenticate(nil, "")
	fmt.Println(errors.Is(err, authn.ErrUnauthenticated))
	// Output:
	// token #1 token client true false <nil>
	// true
}
