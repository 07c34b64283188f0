package authn

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// MinTokenLen is the shortest token a token file may list: 16 bytes of
// base64 or hex is still well over 64 bits of entropy.
const MinTokenLen = 16

// ErrBadTokenFile is wrapped by every reason a token file is refused.
var ErrBadTokenFile = errors.New("bad token file")

// Tokens are the bearer tokens of a token file, re-read when it changes.
type Tokens struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	digests [][sha256.Size]byte
	stamp   fileStamp
	checked time.Time
	err     error // the last reload's failure, nil after a good one
}

// fileStamp tells a changed file from an unchanged one.
type fileStamp struct {
	size  int64
	mtime time.Time
}

// LoadTokens reads the token file at path. It fails when the file cannot
// be read, lists no token, or lists one shorter than MinTokenLen.
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path, now: time.Now}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	digests, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	t.digests, t.stamp, t.checked = digests, stampOf(st), t.now()
	return t, nil
}

func stampOf(st os.FileInfo) fileStamp { return fileStamp{size: st.Size(), mtime: st.ModTime()} }

func readTokens(path string) ([][sha256.Size]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	return ParseTokens(data)
}

// ParseTokens returns the digests of the tokens a token file holds.
func ParseTokens(data []byte) ([][sha256.Size]byte, error) {
	var out [][sha256.Size]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		tok := strings.TrimSpace(sc.Text())
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if strings.ContainsAny(tok, " \t") {
			return nil, fmt.Errorf("%w: line %d holds a space; one token per line", ErrBadTokenFile, line)
		}
		if len(tok) < MinTokenLen {
			return nil, fmt.Errorf("%w: line %d: token shorter than %d bytes", ErrBadTokenFile, line, MinTokenLen)
		}
		out = append(out, sha256.Sum256([]byte(tok)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTokenFile, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no token", ErrBadTokenFile)
	}
	return out, nil
}

// Match reports whether tok is one of the file's tokens and, when it is,
// its position among them (0-based, in file order). Every token is
// compared, in constant time each.
func (t *Tokens) Match(tok string) (int, bool) {
	if t == nil || tok == "" {
		return 0, false
	}
	t.reload()
	d := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	digests := t.digests
	t.mu.Unlock()
	found, at := 0, 0
	for i := range digests {
		eq := subtle.ConstantTimeCompare(d[:], digests[i][:])
		at = subtle.ConstantTimeSelect(eq, i, at)
		found |= eq
	}
	return at, found == 1
}

// First returns the first token of the file, for a process that probes
// its own endpoint.
func (t *Tokens) First() (string, error) {
	data, err := os.ReadFile(t.path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return FirstToken(data)
}

// FirstToken returns the first token a token file holds.
func FirstToken(data []byte) (string, error) {
	if _, err := ParseTokens(data); err != nil {
		return "", err
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l, nil
		}
	}
	return "", fmt.Errorf("%w: no token", ErrBadTokenFile)
}

// Err is the last failed reload's error, nil when the file read last was
// good.
func (t *Tokens) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// reload reads the file again when it changed, at most once per second.
func (t *Tokens) reload() {
	now := t.now()
	t.mu.Lock()
	if now.Sub(t.checked) < time.Second {
		t.mu.Unlock()
		return
	}
	t.checked = now
	old := t.stamp
	t.mu.Unlock()
	st, err := os.Stat(t.path)
	if err == nil && stampOf(st) == old {
		return
	}
	var digests [][sha256.Size]byte
	if err == nil {
		digests, err = readTokens(t.path)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		t.err = fmt.Errorf("reload token file: %w", err)
		return
	}
	t.digests, t.stamp, t.err = digests, stampOf(st), nil
}
