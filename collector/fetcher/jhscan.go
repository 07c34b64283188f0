package fetcher

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stratatrace/strata/collector/job"
)

// A hand-written decoder for job-history event lines. Job histories are the
// largest inputs the collector reads (a 100 000-task job is ~400 MiB), and
// reflection-driven encoding/json spends most of its time validating and
// rescanning them. This scanner walks a line once and fills a jhRecord
// directly; whenever it meets something it does not handle (a string with
// escapes where bytes are kept, a malformed token) it reports failure and
// the caller decodes the line with encoding/json instead, so the result is
// always encoding/json's (FuzzJhistScanner checks that they agree).

type jscan struct {
	b []byte
	i int
	// names interns counter names and event types across lines: a job
	// repeats the same few dozen names millions of times.
	names map[string]string
	// scratch collects a counters record's counts before they are put in
	// a map of the right size; reused across lines.
	scratch *[]jhCount
	// depth is the number of arrays and objects open; the scanner gives a
	// line up past maxNesting (every recursion goes through object or
	// array), and the encoding/json path then rejects it with errNesting.
	depth int
}

// plainByte marks the bytes a string scan steps over without a second
// look: printable ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// jhDecoder is the state one decoding goroutine keeps across lines.
type jhDecoder struct {
	names   map[string]string
	scratch []jhCount
}

func newJhDecoder() *jhDecoder { return &jhDecoder{names: map[string]string{}} }

// maxInterned bounds the intern table against inputs made of unique names.
const maxInterned = 4096

// name reads a string, interned.
func (s *jscan) name() (string, bool) {
	save := s.i
	b, ok := s.str()
	if !ok || s.names == nil {
		s.i = save
		return s.anyStr()
	}
	if v, hit := s.names[string(b)]; hit {
		return v, true
	}
	v := string(b)
	if len(s.names) < maxInterned {
		s.names[v] = v
	}
	return v, true
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jscan) eat(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes and returns its bytes (aliasing the
// line); ok is false for escapes or malformed input.
func (s *jscan) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		for s.i < len(s.b) && plainByte[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			v := s.b[start : s.i-1]
			if !ascii && !utf8.Valid(v) {
				return nil, false // encoding/json would substitute U+FFFD
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return nil, false
}

// anyStr reads a string, unescaping it when needed.
func (s *jscan) anyStr() (string, bool) {
	save := s.i
	if b, ok := s.str(); ok {
		return string(b), true
	}
	s.i = save
	s.ws()
	end, ok := s.skipString()
	if !ok {
		return "", false
	}
	var v string
	if json.Unmarshal(s.b[s.i:end], &v) != nil {
		return "", false
	}
	s.i = end
	return v, true
}

// skipString returns the index after the string starting at s.i.
func (s *jscan) skipString() (int, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return 0, false
	}
	for j := s.i + 1; j < len(s.b); j++ {
		for j < len(s.b) && (plainByte[s.b[j]] || s.b[j] >= 0x80) {
			j++
		}
		if j >= len(s.b) {
			break
		}
		switch c := s.b[j]; {
		case c == '\\':
			j++
			if j >= len(s.b) {
				return 0, false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return 0, false
				}
				for _, h := range s.b[j+1 : j+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number returns the end of the JSON number at s.i (after spaces), and
// whether it is an integer; ok is false when the grammar is not met.
func (s *jscan) number() (end int, integer, ok bool) {
	s.ws()
	j, b := s.i, s.b
	digits := func() bool {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j > k
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return 0, false, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		j++
		integer = false
		if !digits() {
			return 0, false, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		integer = false
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return 0, false, false
		}
	}
	return j, integer, true
}

func (s *jscan) int() (int64, bool) {
	end, integer, ok := s.number()
	if !ok || !integer {
		return 0, false // not an integer: let encoding/json decide
	}
	digits := s.b[s.i:end]
	s.i = end
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) > 18 { // may overflow: let strconv decide
		v, err := strconv.ParseInt(string(s.b[end-len(digits)-btoi(neg):end]), 10, 64)
		return v, err == nil
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *jscan) literal(lit string) bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.i += len(lit)
		return true
	}
	return false
}

// skip skips one value of any kind.
func (s *jscan) skip() bool {
	switch s.peek() {
	case '"':
		end, ok := s.skipString()
		s.i = end
		return ok
	case '{':
		return s.object(func([]byte) bool { return s.skip() })
	case '[':
		return s.array(s.skip)
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	end, _, ok := s.number()
	s.i = end
	return ok
}

// object calls field for every key; field must consume the value.
func (s *jscan) object(field func(key []byte) bool) bool {
	if !s.eat('{') || s.depth >= maxNesting {
		return false
	}
	s.depth++
	ok := s.members(field)
	s.depth--
	return ok
}

func (s *jscan) members(field func(key []byte) bool) bool {
	if s.eat('}') {
		return true
	}
	for {
		key, ok := s.str()
		if !ok || !s.eat(':') || !field(key) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

func (s *jscan) array(elem func() bool) bool {
	if !s.eat('[') || s.depth >= maxNesting {
		return false
	}
	s.depth++
	ok := s.elements(elem)
	s.depth--
	return ok
}

func (s *jscan) elements(elem func() bool) bool {
	if s.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// avroStr reads an Avro-JSON string: bare, null, or {"<type>": value}.
func (s *jscan) avroStr(dst *avroString) bool {
	switch s.peek() {
	case '"':
		v, ok := s.anyStr()
		*dst = avroString(v)
		return ok
	case 'n':
		*dst = ""
		return s.literal("null")
	case '{':
		*dst = ""
		n := 0
		return s.object(func([]byte) bool {
			n++
			return n == 1 && s.avroStr(dst) // a union has exactly one branch
		}) && n == 1
	}
	// A number or boolean where a string was expected: keep its text.
	s.ws()
	start := s.i
	if !s.skip() {
		return false
	}
	*dst = avroString(s.b[start:s.i])
	return true
}

// avroInts reads an int array: bare, null, or {"array": […]}. The values
// go to the end of *buf (shared by a record's four split series, one
// allocation instead of four); dst gets a capacity-capped slice of it.
func (s *jscan) avroInts(dst *avroInts, buf *[]int64) bool {
	switch s.peek() {
	case 'n':
		*dst = nil
		return s.literal("null")
	case '{':
		*dst = nil
		n := 0
		return s.object(func([]byte) bool {
			n++
			return n == 1 && s.avroInts(dst, buf)
		}) && n == 1
	}
	if *buf == nil {
		*buf = make([]int64, 0, 4*job.SplitBuckets)
	}
	start := len(*buf)
	ok := s.array(func() bool {
		v, ok := s.int()
		*buf = append(*buf, v)
		return ok
	})
	*dst = avroInts((*buf)[start:len(*buf):len(*buf)])
	return ok
}

// counters reads a JhCounters record (or its union wrapping) straight into
// the flattened form flatten would produce.
func (s *jscan) counters(dst **jhCounters) bool {
	if s.peek() == 'n' {
		*dst = nil
		return s.literal("null")
	}
	c := &jhCounters{}
	*dst = c
	if s.scratch == nil {
		s.scratch = new([]jhCount)
	}
	mark := len(*s.scratch)
	defer func() {
		if counts := (*s.scratch)[mark:]; len(counts) > 0 {
			c.flat = make(job.Counters, len(counts))
			for _, k := range counts {
				if _, dup := c.flat[k.Name]; !dup {
					c.flat[k.Name] = k.Value
				}
			}
		}
		*s.scratch = (*s.scratch)[:mark]
	}()
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			v, ok := s.anyStr()
			c.Name = v
			return ok
		case "groups":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			c.Groups = scannedGroups
			return s.array(func() bool {
				var g jhCounterGroup
				ok := s.object(func(key []byte) bool {
					switch string(key) {
					case "name":
						v, ok := s.anyStr()
						g.Name = v
						return ok
					case "counts":
						if s.peek() == 'n' {
							return s.literal("null")
						}
						return s.array(func() bool {
							var name string
							var value int64
							ok := s.object(func(key []byte) bool {
								switch string(key) {
								case "name":
									v, ok := s.name()
									name = v
									return ok
								case "value":
									v, ok := s.int()
									value = v
									return ok
								}
								return s.otherKey(key, "name", "value")
							})
							*s.scratch = append(*s.scratch, jhCount{Name: name, Value: value})
							return ok
						})
					}
					return s.otherKey(key, "name", "counts")
				})
				return ok
			})
		case wrappedCounters:
			return s.counters(&c.Wrapped)
		}
		return s.otherKey(key, "name", "groups", wrappedCounters)
	})
}

// otherKey skips the value of a key the caller does not read, unless the
// key differs only in case from one it reads (encoding/json matches keys
// case-insensitively; leave such lines to it). known lists the keys the
// caller reads; none means the job-history record's keys.
func (s *jscan) otherKey(key []byte, known ...string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false // Unicode case folding: leave it to encoding/json
		}
	}
	var buf [64]byte
	if len(key) > len(buf) {
		return s.skip() // longer than any key we read
	}
	lower := buf[:len(key)]
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	if len(known) == 0 {
		if recordKeysLower[string(lower)] {
			return false
		}
		return s.skip()
	}
	for _, k := range known {
		if strings.EqualFold(string(lower), k) {
			return false
		}
	}
	return s.skip()
}

// recordKeysLower holds the lower-cased keys scanJhRecord reads.
var recordKeysLower = func() map[string]bool {
	m := make(map[string]bool, len(recordKeys))
	for _, k := range recordKeys {
		m[strings.ToLower(k)] = true
	}
	return m
}()

var recordKeys = []string{"jobid", "taskid", "attemptId", "taskType", "jobName", "userName", "jobQueueName",
	"jobStatus", "diagnostics", "trackerName", "hostname", "taskStatus", "status", "error",
	"successfulAttemptId", "failedDueToAttempt", "submitTime", "launchTime", "finishTime", "startTime",
	"shuffleFinishTime", "sortFinishTime", "totalMaps", "totalReduces", "counters", "totalCounters",
	"clockSplits", "cpuUsages", "vMemKbytes", "physMemKbytes"}

const wrappedCounters = "org.apache.hadoop.mapreduce.jobhistory.JhCounters"

// scannedGroups marks a counters record whose groups the hand-written
// decoder read (their counts are in flat); flatten only needs to know that
// groups were present.
var scannedGroups = []jhCounterGroup{}

// scanJhLine decodes one event line into ev; false means "use
// encoding/json".
func scanJhLine(line []byte, d *jhDecoder, ev *jhLine) bool {
	s := &jscan{b: line, names: d.names, scratch: &d.scratch}
	seenEvent := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			v, ok := s.name()
			ev.Type = v
			return ok
		case "event":
			if seenEvent || s.peek() == 'n' {
				return false // rare shapes: leave them to encoding/json
			}
			seenEvent = true
			classes := 0
			return s.object(func(class []byte) bool {
				if classes++; classes > 1 || s.peek() == 'n' {
					return false
				}
				ev.one = &jhRecord{}
				return scanJhRecord(s, ev.one)
			}) && classes == 1
		}
		return s.otherKey(key, "type", "event")
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

func scanJhRecord(s *jscan, r *jhRecord) bool {
	return s.object(func(key []byte) bool {
		var i64 *int64
		var str *avroString
		switch string(key) {
		case "jobid":
			return s.plainStr(&r.JobID)
		case "taskid":
			return s.plainStr(&r.TaskID)
		case "attemptId":
			return s.plainStr(&r.AttemptID)
		case "taskType":
			return s.plainStr(&r.TaskType)
		case "jobName":
			str = &r.JobName
		case "userName":
			str = &r.UserName
		case "jobQueueName":
			str = &r.JobQueueName
		case "jobStatus":
			str = &r.JobStatus
		case "diagnostics":
			str = &r.Diagnostics
		case "trackerName":
			str = &r.Tracker
		case "hostname":
			str = &r.Hostname
		case "taskStatus":
			str = &r.TaskStatus
		case "status":
			str = &r.Status
		case "error":
			str = &r.Error
		case "successfulAttemptId":
			str = &r.SuccessfulAttemptID
		case "failedDueToAttempt":
			str = &r.FailedDueToAttempt
		case "submitTime":
			i64 = &r.SubmitTime
		case "launchTime":
			i64 = &r.LaunchTime
		case "finishTime":
			i64 = &r.FinishTime
		case "startTime":
			i64 = &r.StartTime
		case "shuffleFinishTime":
			i64 = &r.ShuffleFinishTime
		case "sortFinishTime":
			i64 = &r.SortFinishTime
		case "totalMaps", "totalReduces":
			v, ok := s.int()
			if key[5] == 'M' {
				r.TotalMaps = int(v)
			} else {
				r.TotalReduces = int(v)
			}
			return ok && int64(int(v)) == v
		case "counters":
			return s.counters(&r.Counters)
		case "totalCounters":
			return s.counters(&r.TotalCounters)
		case "clockSplits":
			return s.avroInts(&r.ClockSplits, &r.splitBuf)
		case "cpuUsages":
			return s.avroInts(&r.CPUUsages, &r.splitBuf)
		case "vMemKbytes":
			return s.avroInts(&r.VMemKbytes, &r.splitBuf)
		case "physMemKbytes":
			return s.avroInts(&r.PhysMemKbytes, &r.splitBuf)
		default:
			return s.otherKey(key) // none: the record's keys
		}
		if str != nil {
			return s.avroStr(str)
		}
		if s.peek() == 'n' {
			return s.literal("null")
		}
		v, ok := s.int()
		*i64 = v
		return ok
	})
}

// plainStr reads a string field that encoding/json would decode into a Go
// string (null leaves it unchanged).
func (s *jscan) plainStr(dst *string) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	v, ok := s.anyStr()
	*dst = v
	return ok
}
