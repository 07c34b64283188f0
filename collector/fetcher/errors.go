package fetcher

import "errors"

// Sentinel errors; check them with errors.Is.
var (
	// ErrUnknownFormat means a file is none of the formats the fetcher
	// reads (job history, rumen trace, Spark event log).
	ErrUnknownFormat = errors.New("unknown input format")
	// ErrUnsupportedCodec means an event log is compressed with a codec the
	// fetcher does not decode (e.g. lzf).
	ErrUnsupportedCodec = errors.New("unsupported compression codec")
	// ErrCorrupt means the input is structurally broken before anything
	// useful could be read (bad magic, bad header, checksum mismatch).
	ErrCorrupt = errors.New("corrupt input")
	// ErrNoJob means the input was readable but described no job (e.g. a
	// job history without a JOB_SUBMITTED event).
	ErrNoJob = errors.New("no job in input")
	// ErrHTTP means a history server answered with a non-2xx status.
	ErrHTTP = errors.New("history server error")
	// ErrUnreachable means a history server's URL gave no answer at all:
	// the connection was refused or timed out, the host is unknown, TLS
	// failed. The error wraps the network's own.
	ErrUnreachable = errors.New("history server unreachable")
	// ErrTooDeep means a JSON value nests arrays and objects deeper than
	// the fetcher follows (see limits.go); it is never a stack overflow.
	ErrTooDeep = errors.New("input nested too deeply")
	// ErrTooLarge means an input passed one of the fetcher's size bounds:
	// one value or line, a job conf, or the memory a job's model may take.
	ErrTooLarge = errors.New("input too large")
)
