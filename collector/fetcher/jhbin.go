package fetcher

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Hadoop's binary job history (mapreduce.jobhistory.jhist.format=binary,
// Hadoop 3's default): the line "Avro-Binary", the Avro schema of its Event
// record as one line of JSON, then every event in Avro's binary encoding,
// one after another with nothing between them. The schema in the header
// fixes the layout (field order, the branches of the event union), so the
// decoder is built from that schema, not from one compiled in.
//
// Each event is transcoded to the Avro-JSON line Hadoop's JSON writer
// writes for it and read by the line decoder of the JSON form, so both
// forms of one history give the same job. Avro's binary encoding
// (https://avro.apache.org/docs/current/specification/): null is no bytes;
// boolean one byte 0 or 1; int and long zig-zag varints; float and double 4
// and 8 bytes little-endian; bytes and string a long length then the bytes;
// a record its fields in order; an enum the int index of its symbol; a
// union the long index of its branch then the branch's value; an array or
// map blocks of a long item count (negative: its absolute value, followed
// by the block's byte size) ending with a count of 0, a map's items each a
// string key and a value; a fixed its size in bytes.

// jhistBinaryMagic is the first line of an Avro-binary job history file.
const jhistBinaryMagic = "Avro-Binary"

// avroKind is the kind of an Avro type.
type avroKind uint8

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroText
	avroRecord
	avroEnum
	avroArray
	avroMap
	avroUnion
	avroFixed
)

var avroPrimitives = map[string]avroKind{
	"null": avroNull, "boolean": avroBoolean, "int": avroInt, "long": avroLong,
	"float": avroFloat, "double": avroDouble, "bytes": avroBytes, "string": avroText,
}

// avroType is one type of a compiled schema.
type avroType struct {
	kind     avroKind
	name     string      // a union branch's name in Avro JSON: the full name of a named type, else the kind's
	fields   []avroField // record
	symbols  []string    // enum
	items    *avroType   // array items, map values
	branches []*avroType // union
	size     int         // fixed
}

type avroField struct {
	name string
	typ  *avroType
}

// errAvroSchema is what an unusable schema in a binary history's header
// wraps.
var errAvroSchema = fmt.Errorf("%w: Avro schema", ErrCorrupt)

// compileAvroSchema compiles the JSON text of an Avro schema.
func compileAvroSchema(text []byte) (*avroType, error) {
	if err := checkNesting(text); err != nil {
		return nil, fmt.Errorf("%w: %w", errAvroSchema, err)
	}
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", errAvroSchema, err)
	}
	c := avroCompiler{names: map[string]*avroType{}}
	return c.compile(v, "")
}

// avroCompiler holds the named types defined so far, by full name.
type avroCompiler struct {
	names map[string]*avroType
}

func fullName(name, namespace string) string {
	if namespace == "" || strings.Contains(name, ".") {
		return name
	}
	return namespace + "." + name
}

// namespaceOf is the namespace a full name defines for the types inside it.
func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

func (c *avroCompiler) compile(v any, namespace string) (*avroType, error) {
	switch s := v.(type) {
	case string:
		if k, ok := avroPrimitives[s]; ok {
			return &avroType{kind: k, name: s}, nil
		}
		if t := c.names[fullName(s, namespace)]; t != nil {
			return t, nil
		}
		if t := c.names[s]; t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%w: unknown type %q", errAvroSchema, s)
	case []any:
		u := &avroType{kind: avroUnion, name: "union"}
		for _, b := range s {
			t, err := c.compile(b, namespace)
			if err != nil {
				return nil, err
			}
			u.branches = append(u.branches, t)
		}
		if len(u.branches) == 0 {
			return nil, fmt.Errorf("%w: a union without branches", errAvroSchema)
		}
		return u, nil
	case map[string]any:
		return c.compileObject(s, namespace)
	}
	return nil, fmt.Errorf("%w: a type is %T", errAvroSchema, v)
}

func (c *avroCompiler) compileObject(m map[string]any, namespace string) (*avroType, error) {
	kind, ok := m["type"].(string)
	if !ok {
		if m["type"] == nil {
			return nil, fmt.Errorf("%w: an object without a type", errAvroSchema)
		}
		return c.compile(m["type"], namespace)
	}
	switch kind {
	case "record", "error", "enum", "fixed":
		name, _ := m["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("%w: a %s without a name", errAvroSchema, kind)
		}
		if ns, ok := m["namespace"].(string); ok {
			namespace = ns
		}
		full := fullName(name, namespace)
		if c.names[full] != nil {
			return nil, fmt.Errorf("%w: %s defined twice", errAvroSchema, full)
		}
		t := &avroType{name: full}
		c.names[full] = t // before its fields, which may refer to it
		switch kind {
		case "enum":
			t.kind = avroEnum
			syms, _ := m["symbols"].([]any)
			for _, s := range syms {
				str, ok := s.(string)
				if !ok {
					return nil, fmt.Errorf("%w: enum %s: symbol %v", errAvroSchema, full, s)
				}
				t.symbols = append(t.symbols, str)
			}
		case "fixed":
			t.kind = avroFixed
			size, ok := m["size"].(float64)
			if !ok || size < 0 || size > maxLineBytes || size != math.Trunc(size) {
				return nil, fmt.Errorf("%w: fixed %s: size %v", errAvroSchema, full, m["size"])
			}
			t.size = int(size)
		default:
			t.kind = avroRecord
			fields, _ := m["fields"].([]any)
			for _, f := range fields {
				fm, ok := f.(map[string]any)
				name, _ := fm["name"].(string)
				if !ok || name == "" {
					return nil, fmt.Errorf("%w: record %s: field %v", errAvroSchema, full, f)
				}
				ft, err := c.compile(fm["type"], namespaceOf(full))
				if err != nil {
					return nil, err
				}
				t.fields = append(t.fields, avroField{name: name, typ: ft})
			}
		}
		return t, nil
	case "array", "map":
		key := "items"
		t := &avroType{kind: avroArray, name: kind}
		if kind == "map" {
			key, t.kind = "values", avroMap
		}
		items, err := c.compile(m[key], namespace)
		if err != nil {
			return nil, err
		}
		t.items = items
		return t, nil
	}
	if k, ok := avroPrimitives[kind]; ok {
		return &avroType{kind: k, name: kind}, nil
	}
	return c.compile(kind, namespace) // {"type": "SomeNamedType"}
}

// avroTranscoder reads values in Avro's binary encoding and appends their
// Avro-JSON text to out.
type avroTranscoder struct {
	r     *bufio.Reader
	read  int64 // bytes read from r
	out   []byte
	text  []byte // a string's bytes, before they are escaped into out
	depth int
}

var (
	errAvroVarint = fmt.Errorf("%w: varint longer than its type", ErrCorrupt)
	errAvroEmpty  = fmt.Errorf("%w: array of items that take no bytes", ErrCorrupt)
	errAvroEvent  = fmt.Errorf("%w: one event longer than %d MiB", ErrTooLarge, maxLineBytes>>20)
)

func (a *avroTranscoder) next() (byte, error) {
	c, err := a.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // inside a value
		}
		return 0, err
	}
	a.read++
	return c, nil
}

// varint reads a zig-zag varint of at most size bytes (5 for int, 10 for
// long).
func (a *avroTranscoder) varint(size int) (int64, error) {
	var u uint64
	for i := 0; i < size; i++ {
		c, err := a.next()
		if err != nil {
			return 0, err
		}
		if i == 9 && c > 1 {
			return 0, errAvroVarint
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			v := int64(u>>1) ^ -int64(u&1)
			if size == 5 && (v < math.MinInt32 || v > math.MaxInt32) {
				return 0, errAvroVarint
			}
			return v, nil
		}
	}
	return 0, errAvroVarint
}

func (a *avroTranscoder) long() (int64, error) { return a.varint(10) }

// length reads a string's or a block's length: at least 0, and no more
// than one event may hold.
func (a *avroTranscoder) length() (int, error) {
	n, err := a.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: negative length %d", ErrCorrupt, n)
	}
	if n > maxLineBytes || len(a.out)+int(n) > maxLineBytes {
		return 0, errAvroEvent
	}
	return int(n), nil
}

// bytesOf reads n bytes into a.text, growing it only as they arrive.
func (a *avroTranscoder) bytesOf(n int) ([]byte, error) {
	a.text = a.text[:0]
	for n > 0 {
		chunk := min(n, 64<<10)
		at := len(a.text)
		a.text = append(a.text, make([]byte, chunk)...)
		k, err := io.ReadFull(a.r, a.text[at:])
		a.read += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		n -= chunk
	}
	return a.text, nil
}

// value transcodes one value of type t.
func (a *avroTranscoder) value(t *avroType) error {
	if len(a.out) > maxLineBytes {
		return errAvroEvent
	}
	switch t.kind {
	case avroNull:
		a.out = append(a.out, "null"...)
	case avroBoolean:
		c, err := a.next()
		if err != nil {
			return err
		}
		if c > 1 {
			return fmt.Errorf("%w: boolean byte %d", ErrCorrupt, c)
		}
		a.out = strconv.AppendBool(a.out, c == 1)
	case avroInt, avroLong:
		size := 10
		if t.kind == avroInt {
			size = 5
		}
		v, err := a.varint(size)
		if err != nil {
			return err
		}
		a.out = strconv.AppendInt(a.out, v, 10)
	case avroFloat, avroDouble:
		size := 8
		if t.kind == avroFloat {
			size = 4
		}
		b, err := a.bytesOf(size)
		if err != nil {
			return err
		}
		var f float64
		var bits uint64
		for i := size - 1; i >= 0; i-- {
			bits = bits<<8 | uint64(b[i])
		}
		if size == 4 {
			f = float64(math.Float32frombits(uint32(bits)))
		} else {
			f = math.Float64frombits(bits)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			a.out = append(a.out, "null"...) // JSON has no such number; no field the fetcher reads is one
		} else {
			a.out = strconv.AppendFloat(a.out, f, 'g', -1, 64)
		}
	case avroText, avroBytes:
		n, err := a.length()
		if err != nil {
			return err
		}
		b, err := a.bytesOf(n)
		if err != nil {
			return err
		}
		a.out = appendAvroJSONString(a.out, b, t.kind == avroBytes)
	case avroFixed:
		b, err := a.bytesOf(t.size)
		if err != nil {
			return err
		}
		a.out = appendAvroJSONString(a.out, b, true)
	case avroEnum:
		i, err := a.varint(5)
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.symbols)) {
			return fmt.Errorf("%w: enum %s has no symbol %d", ErrCorrupt, t.name, i)
		}
		a.out = appendAvroJSONString(a.out, []byte(t.symbols[i]), false)
	case avroRecord, avroArray, avroMap, avroUnion:
		if a.depth++; a.depth > maxNesting {
			return errNesting
		}
		defer func() { a.depth-- }()
		return a.container(t)
	}
	return nil
}

// container transcodes a record, an array, a map or a union.
func (a *avroTranscoder) container(t *avroType) error {
	switch t.kind {
	case avroRecord:
		a.out = append(a.out, '{')
		for i, f := range t.fields {
			if i > 0 {
				a.out = append(a.out, ',')
			}
			a.out = appendAvroJSONString(a.out, []byte(f.name), false)
			a.out = append(a.out, ':')
			if err := a.value(f.typ); err != nil {
				return err
			}
		}
		a.out = append(a.out, '}')
	case avroUnion:
		i, err := a.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.branches)) {
			return fmt.Errorf("%w: union has no branch %d", ErrCorrupt, i)
		}
		b := t.branches[i]
		if b.kind == avroNull {
			a.out = append(a.out, "null"...)
			return nil
		}
		a.out = append(a.out, '{')
		a.out = appendAvroJSONString(a.out, []byte(b.name), false)
		a.out = append(a.out, ':')
		if err := a.value(b); err != nil {
			return err
		}
		a.out = append(a.out, '}')
	case avroArray, avroMap:
		open, end := byte('['), byte(']')
		if t.kind == avroMap {
			open, end = '{', '}'
		}
		a.out = append(a.out, open)
		first := true
		for {
			n, err := a.long()
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if n < 0 {
				if n = -n; n < 0 {
					return fmt.Errorf("%w: block count", ErrCorrupt)
				}
				if _, err := a.long(); err != nil { // the block's byte size
					return err
				}
			}
			for ; n > 0; n-- {
				if !first {
					a.out = append(a.out, ',')
				}
				first = false
				before := a.read
				if t.kind == avroMap {
					k, err := a.length()
					if err != nil {
						return err
					}
					key, err := a.bytesOf(k)
					if err != nil {
						return err
					}
					a.out = appendAvroJSONString(a.out, key, false)
					a.out = append(a.out, ':')
				}
				if err := a.value(t.items); err != nil {
					return err
				}
				if a.read == before {
					return errAvroEmpty // else a count of 2^62 would spin without reading
				}
				if len(a.out) > maxLineBytes {
					return errAvroEvent
				}
			}
		}
		a.out = append(a.out, end)
	}
	return nil
}

// appendAvroJSONString appends b as a JSON string: a string's UTF-8 (an
// invalid byte becomes U+FFFD, as encoding/json reads it), or with latin1
// set, each byte as the code point of its value (Avro JSON's bytes and
// fixed).
func appendAvroJSONString(out, b []byte, latin1 bool) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if latin1 {
			if r >= utf8.RuneSelf {
				out = utf8.AppendRune(out, r)
				i++
				continue
			}
		} else if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, `\ufffd`...)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			out = append(out, byte(r))
		}
		i += size
	}
	return append(out, '"')
}

// readBinaryEvents reads the events of a binary job history after its
// header into b. An event that is valid Avro but not a usable event line
// is skipped; a stream cut or damaged inside an event ends the read with a
// warning (the events after it cannot be found).
func readBinaryEvents(r *bufio.Reader, event *avroType, b *jhBuilder) {
	d := newJhDecoder()
	a := &avroTranscoder{r: r}
	var skipped int
	var firstBad string
	defer func() {
		if skipped > 0 {
			b.warnf("job history: skipped %d malformed event(s), first: %s", skipped, firstBad)
		}
	}()
	for n := 1; ; n++ {
		if _, err := r.Peek(1); err != nil {
			if !errors.Is(err, io.EOF) {
				b.warnf("job history unreadable after event %d: %v", n-1, err)
			}
			return
		}
		a.out = a.out[:0]
		if err := a.value(event); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				b.warnf("job history truncated in event %d", n)
			} else {
				b.warnf("job history unreadable from event %d: %v", n, err)
			}
			return
		}
		ev, err := decodeJhLine(a.out, d, true)
		if err != nil {
			if skipped++; skipped == 1 {
				firstBad = fmt.Sprintf("event %d: %v", n, err)
			}
			continue
		}
		if !b.applyLine(&ev) {
			return
		}
	}
}
