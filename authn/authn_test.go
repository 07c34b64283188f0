package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTokens(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		n          int
		bad        bool
	}{
		{"one", "0123456789abcdef\n", 1, false},
		{"comments and blanks", "# rotated 2025-01\n\n  0123456789abcdef  \nfedcba9876543210fedc\n", 2, false},
		{"no newline at end", "0123456789abcdef", 1, false},
		{"empty", "", 0, true},
		{"only comments", "# nothing\n", 0, true},
		{"short", "secret\n", 0, true},
		{"two on a line", "0123456789abcdef fedcba9876543210\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseTokens([]byte(tc.data))
			if tc.bad {
				if !errors.Is(err, ErrBadTokenFile) {
					t.Fatalf("err = %v, want ErrBadTokenFile", err)
				}
				return
			}
			if err != nil || len(d) != tc.n {
				t.Fatalf("%d tokens, %v; want %d", len(d), err, tc.n)
			}
		})
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add([]byte("0123456789abcdef\n# c\n"))
	f.Add([]byte("\n\n\t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTokens(data)
		if err == nil && len(d) == 0 {
			t.Fatal("no error and no token")
		}
		first, ferr := FirstToken(data)
		if (err == nil) != (ferr == nil) {
			t.Fatalf("ParseTokens err %v, FirstToken err %v", err, ferr)
		}
		if ferr == nil && len(first) < MinTokenLen {
			t.Fatalf("first token %q is short", first)
		}
	})
}

// Match finds each listed token at its position, refuses others, and sees
// a rewritten file after a second; a broken rewrite keeps the old tokens
// and says why in Err.
func TestTokensMatchAndReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("aaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbb\n"), 0o600)
	tok, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok.now = func() time.Time { return now }
	for s, want := range map[string]int{"aaaaaaaaaaaaaaaa": 0, "bbbbbbbbbbbbbbbb": 1} {
		if i, ok := tok.Match(s); !ok || i != want {
			t.Errorf("Match(%q) = %d, %v; want %d", s, i, ok, want)
		}
	}
	for _, s := range []string{"", "aaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaa", "cccccccccccccccc"} {
		if _, ok := tok.Match(s); ok {
			t.Errorf("Match(%q) accepted", s)
		}
	}
	os.WriteFile(path, []byte("cccccccccccccccccc\n"), 0o600)
	os.Chtimes(path, now.Add(time.Minute), now.Add(time.Minute))
	if _, ok := tok.Match("cccccccccccccccccc"); ok {
		t.Error("file re-read within the second")
	}
	now = now.Add(2 * time.Second)
	if _, ok := tok.Match("cccccccccccccccccc"); !ok {
		t.Error("rotated token refused")
	}
	if _, ok := tok.Match("aaaaaaaaaaaaaaaa"); ok {
		t.Error("removed token still accepted")
	}
	os.WriteFile(path, []byte("short\n"), 0o600)
	os.Chtimes(path, now.Add(time.Hour), now.Add(time.Hour))
	now = now.Add(2 * time.Second)
	if _, ok := tok.Match("cccccccccccccccccc"); !ok || !errors.Is(tok.Err(), ErrBadTokenFile) {
		t.Errorf("after a bad rewrite: old token kept = %v, Err = %v", ok, tok.Err())
	}
}

// A real TLS server with Policy.HTTP: each credential gets the status a
// user would see.
func TestHTTPPolicy(t *testing.T) {
	b, err := WriteBundle(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := LoadTokens(b.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	token, _ := toks.First()
	// A second CA's client certificate: valid, but not ours.
	other, err := WriteBundle(t.TempDir(), nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{Tokens: toks}
	var denied []string
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := IdentityFrom(r.Context())
		io.WriteString(w, id.Method+" "+id.Name)
	})
	note := func(_ *http.Request, err error) { denied = append(denied, err.Error()) }
	mux.Handle("/healthz", p.HTTP(RoleAny, ok, note))
	mux.Handle("/metrics", p.HTTP(RoleClient, ok, note))
	srv := httptest.NewUnstartedServer(mux)
	tlsCfg, err := b.Files(RoleCollector).ServerConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = tls.NewListener(srv.Listener, tlsCfg)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	url := "https://" + srv.Listener.Addr().String()

	client := func(role Role, bundle Bundle) *http.Client {
		cfg, err := bundle.ClientTLS(role)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := b.ClientTLS(RoleAny)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RootCAs = ours.RootCAs // the server is b's, whoever signed the client
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	get := func(c *http.Client, path, auth string) (int, string) {
		req, _ := http.NewRequest("GET", url+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			return -1, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name       string
		c          *http.Client
		path, auth string
		code       int
		body       string
	}{
		{"nothing", client("", b), "/metrics", "", 401, "unauthorized"},
		{"nothing on healthz", client("", b), "/healthz", "", 401, "unauthorized"},
		{"token", client("", b), "/metrics", "Bearer " + token, 200, "token token #1"},
		{"token, scheme lowercase", client("", b), "/metrics", "bearer " + token, 200, "token token #1"},
		{"wrong token", client("", b), "/metrics", "Bearer " + strings.Repeat("x", 64), 401, "unauthorized"},
		{"basic, not base64", client("", b), "/metrics", "Basic " + token, 401, "unauthorized"},
		{"basic, token as password", client("", b), "/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte("me:"+token)), 200, "token token #1"},
		{"basic, wrong password", client("", b), "/metrics", "Basic " + base64.StdEncoding.EncodeToString([]byte(token+":x")), 401, "unauthorized"},
		{"client cert", client(RoleClient, b), "/metrics", "", 200, "certificate strata-client"},
		{"agent cert on metrics", client(RoleAgent, b), "/metrics", "", 403, "forbidden"},
		{"agent cert on healthz", client(RoleAgent, b), "/healthz", "", 200, "certificate strata-agent"},
		{"collector cert on healthz", client(RoleCollector, b), "/healthz", "", 200, "certificate strata-collector"},
		{"other CA's client cert", client(RoleClient, other), "/metrics", "", -1, "certificate"},
	} {
		code, body := get(tc.c, tc.path, tc.auth)
		if code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q; want %d with %q", tc.name, code, body, tc.code, tc.body)
		}
	}
	resp, err := client("", b).Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ch := resp.Header.Values("WWW-Authenticate"); len(ch) != 2 || !strings.HasPrefix(ch[1], "Basic ") {
		t.Errorf("401 challenges %q; want Bearer and Basic (a browser's login prompt)", ch)
	}
	if len(denied) != 7 {
		t.Errorf("denied callback heard %d refusals, want 7: %q", len(denied), denied)
	}
}

func TestCertificateWithoutRole(t *testing.T) {
	ca, err := NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(RoleClient, "someone", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf.Cert.Subject.OrganizationalUnit = []string{"web-servers"}
	p := &Policy{Insecure: true}
	_, err = p.Authenticate(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf.Cert}}}, "")
	if !errors.Is(err, ErrNoRole) {
		t.Fatalf("certificate without a role: %v, want ErrNoRole (even when insecure)", err)
	}
	id, err := p.Authenticate(nil, "")
	if err != nil || !id.Allows(RoleAgent) || !id.Allows(RoleClient) {
		t.Fatalf("insecure anonymous = %+v, %v; want every role", id, err)
	}
	if _, err := (&Policy{}).Authenticate(nil, ""); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no credentials, not insecure: %v", err)
	}
	if _, err := ca.Issue("admin", "x", nil, time.Hour); err == nil {
		t.Fatal("issued a certificate of an unknown role")
	}
}

// A server's key pair is read again after its files change: the next
// handshake presents the renewed certificate.
func TestServerKeyPairRotation(t *testing.T) {
	dir := t.TempDir()
	b, err := WriteBundle(dir, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := b.Files(RoleCollector).ServerConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(c.Certificate[0])
		return x.SerialNumber.String()
	}
	before := serial()
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(RoleCollector, "strata-collector", []string{"127.0.0.1"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if _, _, err := WriteFiles(dir, "collector", leaf.Cert, leaf.Key); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, "collector.crt"), later, later)
	if after := serial(); after == before || after != leaf.Cert.SerialNumber.String() {
		t.Fatalf("after rotation serial %s, want the new %s (old %s)", after, leaf.Cert.SerialNumber, before)
	}
	if cfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("client auth %v, want RequireAndVerifyClientCert", cfg.ClientAuth)
	}
	if _, err := (TLSFiles{Cert: "x"}).ServerConfig(false); !errors.Is(err, ErrTLSConfig) {
		t.Fatalf("cert without key: %v", err)
	}
}
