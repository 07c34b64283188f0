package answer

// MomentKind says which moment of an application's life is shown.
type MomentKind int

const (
	// MomentDefault asks for the application's default moment: the peak
	// when it has ended, else now.
	MomentDefault MomentKind = iota
	// MomentNow is the blocks live now (each buffer as last resolved
	// while live); At is 0.
	MomentNow
	// MomentPeak is the first time at which the app's cached RDD blocks
	// held the most bytes.
	MomentPeak
	// MomentAt is a time asked for.
	MomentAt
)

// MomentQuery asks for one moment of an application's life.
type MomentQuery struct {
	AppID string
	Want  MomentKind
	// At is, with MomentAt, the moment in unix nanoseconds, or with
	// SinceStart the nanoseconds after the app's first lifecycle record.
	At         int64
	SinceStart bool
}

// Moment is the moment of an application's life a question shows, and
// what its cached RDD blocks held then and at their peak.
type Moment struct {
	// Kind is the moment shown: MomentNow, MomentPeak or MomentAt (never
	// MomentDefault); Default says it was the app's default.
	Kind    MomentKind
	Default bool
	// AtNs is the moment, unix nanoseconds; 0 with MomentNow.
	AtNs int64
	// Ended: no buffer of the app's blocks is live now.
	Ended bool
	// FirstNs and LastNs are the times of the app's first and last
	// lifecycle record (0 when it has none).
	FirstNs, LastNs int64
	// PeakNs is the first time the app's cached RDD blocks held the most
	// bytes, PeakBytes and PeakPages what they held then; PeakNs is 0
	// when they never held a present page.
	PeakNs               int64
	PeakBytes, PeakPages uint64
	// Bytes and Pages are what the cached RDD blocks held at the moment
	// (now: after the app's last record).
	Bytes, Pages uint64
}

// Time is the moment in unix nanoseconds: AtNs, or for now the app's
// last lifecycle record (what is live now is the state after it).
func (m Moment) Time() int64 {
	if m.AtNs == 0 {
		return m.LastNs
	}
	return m.AtNs
}
