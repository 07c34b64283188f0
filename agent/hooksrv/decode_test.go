package hooksrv

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// mutate returns a copy of the golden frame name changed by f.
func mutate(tb testing.TB, name string, f func(b []byte) []byte) []byte {
	tb.Helper()
	return f(bytes.Clone(readGolden(tb, name)))
}

// setLength rewrites the header length to the packet size.
func setLength(b []byte) []byte {
	le.PutUint32(b[offLength:], uint32(len(b)))
	return b
}

func TestDecodeMalformed(t *testing.T) {
	const reg = HeaderSize // body start
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrShort},
		{"short header", mutate(t, "free", func(b []byte) []byte { return b[:HeaderSize-1] }), ErrShort},
		{"bad magic", mutate(t, "free", func(b []byte) []byte { b[0] ^= 0xff; return b }), ErrBadMagic},
		{"version 1", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offVersion:], 1); return b }), ErrBadVersion},
		{"version 2", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offVersion:], 2); return b }), ErrBadVersion},
		{"version 4", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offVersion:], 4); return b }), ErrBadVersion},
		{"version 0", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offVersion:], 0); return b }), ErrBadVersion},
		{"length field too big", mutate(t, "free", func(b []byte) []byte { b[offLength]++; return b }), ErrBadLength},
		{"truncated packet", mutate(t, "register_heap", func(b []byte) []byte { return b[:len(b)-3] }), ErrBadLength},
		{"over FrameMax", mutate(t, "free", func(b []byte) []byte {
			return setLength(append(b, make([]byte, FrameMax)...))
		}), ErrBadLength},
		{"unknown type", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offType:], 11); return b }), ErrUnknownType},
		{"type 0", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offType:], 0); return b }), ErrUnknownType},
		{"header reserved", mutate(t, "free", func(b []byte) []byte { b[offHdrReserved] = 1; return b }), ErrBadField},
		{"hello body short", mutate(t, "hello", func(b []byte) []byte { return setLength(b[:HeaderSize+10]) }), ErrBadLength},
		{"hello reserved", mutate(t, "hello", func(b []byte) []byte { b[reg+helloReserved] = 1; return b }), ErrBadField},
		{"hello walk mode 5", mutate(t, "hello", func(b []byte) []byte { b[reg+helloWalk] = 5; return b }), ErrBadField},
		{"hello app id over max", mutate(t, "hello", func(b []byte) []byte {
			le.PutUint16(b[reg+helloAppIDLen:], StrMax+1)
			return b
		}), ErrBadString},
		{"hello executor id truncated", mutate(t, "hello", func(b []byte) []byte {
			le.PutUint16(b[reg+helloExecutorIDLen:], 2)
			return b
		}), ErrBadString},
		{"hello trailing bytes", mutate(t, "hello", func(b []byte) []byte { return setLength(append(b, 'x')) }), ErrBadLength},
		{"register name truncated", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint16(b[reg+registerNameLen:], 20)
			return b
		}), ErrBadString},
		{"register name empty", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint16(b[reg+registerNameLen:], 0)
			return setLength(b[:HeaderSize+registerSize])
		}), ErrBadString},
		{"register trailing bytes", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint16(b[reg+registerNameLen:], 3)
			return b
		}), ErrBadLength},
		{"register body short", mutate(t, "register_heap", func(b []byte) []byte { return setLength(b[:HeaderSize+8]) }), ErrBadLength},
		{"register block 0", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint64(b[reg+registerBlockID:], 0)
			return b
		}), ErrBadField},
		{"register length 0", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint64(b[reg+registerLength:], 0)
			return b
		}), ErrBadField},
		{"register range wraps", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint64(b[reg+registerVaddr:], ^uint64(0)-10)
			return b
		}), ErrBadField},
		{"register mode 3", mutate(t, "register_heap", func(b []byte) []byte { b[reg+registerMode] = 3; return b }), ErrBadField},
		{"register location 3", mutate(t, "register_heap", func(b []byte) []byte { b[reg+registerLocation] = 3; return b }), ErrBadField},
		{"register kind 0", mutate(t, "register_heap", func(b []byte) []byte { b[reg+registerKind] = 0; return b }), ErrBadField},
		{"register kind 8", mutate(t, "register_heap", func(b []byte) []byte { b[reg+registerKind] = 8; return b }), ErrBadField},
		{"register unknown flag", mutate(t, "register_heap", func(b []byte) []byte { b[reg+registerFlags] = 4; return b }), ErrBadField},
		{"register column not a batch", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint32(b[reg+registerColumn:], 0)
			return b
		}), ErrBadField},
		{"register label not a batch", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint16(b[reg+registerLabelLen:], 1)
			return setLength(append(b, 'c'))
		}), ErrBadField},
		{"register column -2", mutate(t, "register_batch", func(b []byte) []byte {
			le.PutUint32(b[reg+registerColumn:], uint32(0xfffffffe))
			return b
		}), ErrBadField},
		{"register label truncated", mutate(t, "register_batch", func(b []byte) []byte {
			le.PutUint16(b[reg+registerLabelLen:], 9)
			return b
		}), ErrBadString},
		{"register label over max", mutate(t, "register_batch", func(b []byte) []byte {
			le.PutUint16(b[reg+registerLabelLen:], StrMax+1)
			return b
		}), ErrBadString},
		{"walk block 0", mutate(t, "walk", func(b []byte) []byte { le.PutUint64(b[reg+walkBlockID:], 0); return b }), ErrBadField},
		{"walk state 0", mutate(t, "walk", func(b []byte) []byte { b[reg+walkState] = 0; return b }), ErrBadField},
		{"walk state 4", mutate(t, "walk", func(b []byte) []byte { b[reg+walkState] = 4; return b }), ErrBadField},
		{"walk reserved", mutate(t, "walk", func(b []byte) []byte { b[reg+walkReserved] = 1; return b }), ErrBadField},
		{"walk reserved2", mutate(t, "walk", func(b []byte) []byte { b[reg+walkReserved2+2] = 1; return b }), ErrBadField},
		{"walk no parts", mutate(t, "walk", func(b []byte) []byte { le.PutUint16(b[reg+walkParts:], 0); return b }), ErrBadField},
		{"walk part = parts", mutate(t, "walk", func(b []byte) []byte { le.PutUint16(b[reg+walkPart:], 2); return b }), ErrBadField},
		{"walk count over total", mutate(t, "walk", func(b []byte) []byte { le.PutUint32(b[reg+walkExtents:], 2); return b }), ErrBadField},
		{"walk count over max", mutate(t, "walk", func(b []byte) []byte {
			le.PutUint16(b[reg+walkCount:], WalkExtentsMax+1)
			le.PutUint32(b[reg+walkExtents:], 1000)
			return b
		}), ErrBadField},
		{"walk count past body", mutate(t, "walk", func(b []byte) []byte { le.PutUint16(b[reg+walkCount:], 4); return b }), ErrBadLength},
		{"walk extent trailing", mutate(t, "walk", func(b []byte) []byte { return setLength(append(b, 0)) }), ErrBadLength},
		{"walk body short", mutate(t, "walk_stale", func(b []byte) []byte { return setLength(b[:len(b)-1]) }), ErrBadLength},
		{"walk extent empty", mutate(t, "walk", func(b []byte) []byte {
			le.PutUint64(b[reg+walkSize+extentSize+8:], 0)
			return b
		}), ErrBadField},
		{"walk extent wraps", mutate(t, "walk", func(b []byte) []byte {
			le.PutUint64(b[reg+walkSize+2*extentSize:], ^uint64(0)-4095)
			return b
		}), ErrBadField},
		{"walk extents overlap", mutate(t, "walk", func(b []byte) []byte {
			le.PutUint64(b[reg+walkSize+extentSize:], 0x7f1235001000)
			return b
		}), ErrBadField},
		{"walk stale with extents", mutate(t, "walk", func(b []byte) []byte {
			b[reg+walkState] = byte(WalkStale)
			return b
		}), ErrBadField},
		{"walk stale in parts", mutate(t, "walk_stale", func(b []byte) []byte { le.PutUint16(b[reg+walkParts:], 2); return b }), ErrBadField},
		{"gc body long", mutate(t, "gc", func(b []byte) []byte { return setLength(append(b, 0)) }), ErrBadLength},
		{"gc reserved", mutate(t, "gc", func(b []byte) []byte { b[reg+epochReserved] = 1; return b }), ErrBadField},
		{"checked reserved", mutate(t, "checked", func(b []byte) []byte { b[reg+epochReserved+3] = 1; return b }), ErrBadField},
		{"register chunk = chunks", mutate(t, "register_heap", func(b []byte) []byte {
			le.PutUint32(b[reg+registerChunk:], 2)
			return b
		}), ErrBadField},
		{"register no chunks", mutate(t, "register_offheap", func(b []byte) []byte {
			le.PutUint32(b[reg+registerChunks:], 0)
			return b
		}), ErrBadField},
		{"free reason 0", mutate(t, "free", func(b []byte) []byte { b[reg+freeReason] = 0; return b }), ErrBadField},
		{"free reason 7", mutate(t, "free", func(b []byte) []byte { b[reg+freeReason] = 7; return b }), ErrBadField},
		{"free reserved", mutate(t, "free", func(b []byte) []byte { b[reg+freeReserved+1] = 1; return b }), ErrBadField},
		{"free reserved2", mutate(t, "free", func(b []byte) []byte { b[reg+freeReserved2+3] = 1; return b }), ErrBadField},
		{"move body long", mutate(t, "move", func(b []byte) []byte { return setLength(append(b, 0)) }), ErrBadLength},
		{"move length 0", mutate(t, "move", func(b []byte) []byte { le.PutUint64(b[reg+moveLength:], 0); return b }), ErrBadField},
		{"move block 0", mutate(t, "move", func(b []byte) []byte { le.PutUint64(b[reg+moveBlockID:], 0); return b }), ErrBadField},
		{"access kind alloc", mutate(t, "access_read", func(b []byte) []byte { b[reg+accessKind] = 1; return b }), ErrBadField},
		{"access reserved", mutate(t, "access_read", func(b []byte) []byte { b[reg+accessReserved+2] = 1; return b }), ErrBadField},
		{"access reserved2", mutate(t, "access_read", func(b []byte) []byte { b[reg+accessReserved2] = 1; return b }), ErrBadField},
		{"access block 0", mutate(t, "access_read", func(b []byte) []byte { le.PutUint64(b[reg+accessBlockID:], 0); return b }), ErrBadField},
		{"access range wraps", mutate(t, "access_write", func(b []byte) []byte {
			le.PutUint64(b[reg+accessOffset:], ^uint64(0))
			return b
		}), ErrBadField},
		{"free body short", mutate(t, "free", func(b []byte) []byte { return setLength(b[:len(b)-1]) }), ErrBadLength},
		{"free block 0", mutate(t, "free", func(b []byte) []byte { le.PutUint64(b[reg+freeBlockID:], 0); return b }), ErrBadField},
		{"free as move", mutate(t, "free", func(b []byte) []byte { le.PutUint16(b[offType:], uint16(FrameMove)); return b }), ErrBadLength},
		{"off body short", mutate(t, "off_empty", func(b []byte) []byte { return setLength(b[:len(b)-1]) }), ErrBadLength},
		{"off reason 0", mutate(t, "off", func(b []byte) []byte { b[reg+offReason] = 0; return b }), ErrBadField},
		{"off reason 6", mutate(t, "off", func(b []byte) []byte { b[reg+offReason] = 6; return b }), ErrBadField},
		{"off reserved", mutate(t, "off", func(b []byte) []byte { b[reg+offReserved] = 1; return b }), ErrBadField},
		{"off reserved2", mutate(t, "off", func(b []byte) []byte { b[reg+offReserved2+1] = 1; return b }), ErrBadField},
		{"off detail over max", mutate(t, "off", func(b []byte) []byte {
			le.PutUint16(b[reg+offDetailLen:], StrMax+1)
			return b
		}), ErrBadString},
		{"off detail truncated", mutate(t, "off", func(b []byte) []byte {
			le.PutUint16(b[reg+offDetailLen:], 60)
			return b
		}), ErrBadString},
		{"off trailing bytes", mutate(t, "off", func(b []byte) []byte { return setLength(append(b, 'x')) }), ErrBadLength},
		{"dropped body short", mutate(t, "dropped", func(b []byte) []byte { return setLength(b[:len(b)-8]) }), ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.frame)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error = %v, want %v wrapped with %v", err, tc.want, ErrMalformed)
			}
			if !strings.HasPrefix(err.Error(), "decode frame: ") {
				t.Errorf("error %q does not start with %q", err, "decode frame: ")
			}
		})
	}
}

// Names from JNI come in modified UTF-8; they are repaired, not rejected.
func TestDecodeRepairsUTF8(t *testing.T) {
	b := mutate(t, "register_heap", func(b []byte) []byte { b[len(b)-1] = 0xc0; return b })
	f, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := f.Body.(*Register).Name; got != "rdd_7_\uFFFD" {
		t.Errorf("name = %q, want %q", got, "rdd_7_\uFFFD")
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// re-encodes to the same bytes (no field is silently ignored).
func FuzzDecode(f *testing.F) {
	for _, tc := range goldenFrames {
		f.Add(readGolden(f, tc.name))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if fr.Body == nil || fr.Body.frameType() != fr.Type {
			t.Fatalf("body %T does not match type %v", fr.Body, fr.Type)
		}
		if got := encode(fr); !bytes.Equal(got, b) && !repaired(fr.Body) {
			t.Fatalf("re-encoded\n%x\ninput\n%x", got, b)
		}
	})
}

// repaired reports whether a string of the body had invalid UTF-8 replaced.
func repaired(b Body) bool {
	switch b := b.(type) {
	case *Hello:
		return strings.ContainsRune(b.AppID+b.ExecutorID, '\uFFFD')
	case *Register:
		return strings.ContainsRune(b.Name+b.Label, '\uFFFD')
	case *Off:
		return strings.ContainsRune(b.Detail, '\uFFFD')
	}
	return false
}
