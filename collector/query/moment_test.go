package query

import (
	"errors"
	"testing"
	"time"

	"github.com/stratatrace/strata/collector/answer"
	"github.com/stratatrace/strata/collector/store"
)

func TestParseMoment(t *testing.T) {
	t0 := time.Date(2023, 11, 14, 22, 13, 21, 500_000_000, time.UTC).UnixNano()
	for _, tc := range []struct {
		in   string
		want answer.MomentQuery
	}{
		{"", answer.MomentQuery{Want: answer.MomentDefault}},
		{" now ", answer.MomentQuery{Want: answer.MomentNow}},
		{"peak", answer.MomentQuery{Want: answer.MomentPeak}},
		{"+42s", answer.MomentQuery{Want: answer.MomentAt, At: 42e9, SinceStart: true}},
		{"+1m30.5s", answer.MomentQuery{Want: answer.MomentAt, At: 90.5e9, SinceStart: true}},
		{"+0s", answer.MomentQuery{Want: answer.MomentAt, At: 0, SinceStart: true}},
		{"2023-11-14T22:13:21.5Z", answer.MomentQuery{Want: answer.MomentAt, At: t0}},
		{"2023-11-14T23:13:21.5+01:00", answer.MomentQuery{Want: answer.MomentAt, At: t0}},
	} {
		got, err := ParseMoment(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseMoment(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"yesterday", "+", "+-3s", "+3", "42s", "1969-12-31T23:59:59Z", "2023-11-14"} {
		if _, err := ParseMoment(bad); !errors.Is(err, store.ErrInvalidQuery) {
			t.Errorf("ParseMoment(%q): %v, want ErrInvalidQuery", bad, err)
		}
	}
}

func TestMomentWords(t *testing.T) {
	t0 := time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC).UnixNano()
	base := answer.Moment{FirstNs: t0, LastNs: t0 + 6e9, PeakNs: t0 + 2e9, PeakBytes: 57344, PeakPages: 14}
	with := func(f func(*answer.Moment)) answer.Moment {
		m := base
		f(&m)
		return m
	}
	for _, tc := range []struct {
		m    answer.Moment
		want string
	}{
		{with(func(m *answer.Moment) { m.Kind, m.Default, m.Bytes = answer.MomentNow, true, 4096 }),
			"now: the application is running, its RDDs hold 4.0 KiB"},
		{with(func(m *answer.Moment) { m.Kind, m.Ended = answer.MomentNow, true }),
			"now, its RDDs hold 0 B; the application has ended"},
		{with(func(m *answer.Moment) {
			m.Kind, m.Default, m.Ended, m.AtNs, m.Bytes = answer.MomentPeak, true, true, t0+2e9, 57344
		}),
			"the moment its RDDs held the most: 2023-11-14 22:13:22.000 UTC (+2s), 56.0 KiB; the application has ended"},
		{with(func(m *answer.Moment) { m.Kind, m.AtNs, m.Bytes = answer.MomentAt, t0+1500_000_400, 1<<30 }),
			"2023-11-14 22:13:21.500 UTC (+1.5s): its RDDs held 1.0 GiB (at most 56.0 KiB, at +2s)"},
		{with(func(m *answer.Moment) { m.Kind, m.AtNs, m.PeakNs = answer.MomentAt, t0-1e6, 0 }),
			"2023-11-14 22:13:19.999 UTC (-1ms): its RDDs held 0 B"},
	} {
		if got := MomentWords(tc.m); got != tc.want {
			t.Errorf("MomentWords(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
