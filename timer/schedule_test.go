package timer_test

import (
	"math"
	"sort"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests must not depend on the machine's zone database

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/timer"
)

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}

// requireInstant fails unless got is the same instant as want (time.Time
// values are compared by instant, not by location or monotonic reading).
func requireInstant(t *testing.T, want, got time.Time, msgAndArgs ...any) {
	t.Helper()
	require.Truef(t, want.Equal(got), "want %s, got %s %v", want.UTC(), got.UTC(), msgAndArgs)
}

// requireScheduleError fails unless err is a *ScheduleError about field
// that matches ErrBadSchedule, and returns its input.
func requireScheduleError(t *testing.T, err error, field string) (input string) {
	t.Helper()
	require.ErrorIs(t, err, timer.ErrBadSchedule)
	var se *timer.ScheduleError
	require.ErrorAs(t, err, &se)
	require.Equal(t, field, se.Field)
	require.NotEmpty(t, se.Reason)
	return se.Input
}

func TestParseTimeDate(t *testing.T) {
	t.Parallel()
	ber := berlin(t)
	utc := func(y int, mo time.Month, d, h, mi, s, ns int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
	}
	local := func(y int, mo time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, mo, d, h, mi, s, 0, ber)
	}
	tests := []struct {
		in   string
		want time.Time
	}{
		{"2026-01-02T15:04:05Z", utc(2026, 1, 2, 15, 4, 5, 0)},
		{"2026-01-02T15:04:05.250Z", utc(2026, 1, 2, 15, 4, 5, 250e6)},
		{"2026-01-02T16:04:05+01:00", utc(2026, 1, 2, 15, 4, 5, 0)},
		{"2026-01-02T16:04:05.5+01:00", utc(2026, 1, 2, 15, 4, 5, 500e6)},
		{"2026-01-02 16:04:05+01:00", utc(2026, 1, 2, 15, 4, 5, 0)},
		{"2026-01-02T16:04:05.000+0100", utc(2026, 1, 2, 15, 4, 5, 0)},
		{"  2026-01-02T15:04:05Z\n", utc(2026, 1, 2, 15, 4, 5, 0)},
		// Without a zone: in loc, on both sides of daylight saving time.
		{"2026-01-02T15:04:05", local(2026, 1, 2, 15, 4, 5)},
		{"2026-07-02 15:04:05", local(2026, 7, 2, 15, 4, 5)},
		{"2026-07-02T15:04", local(2026, 7, 2, 15, 4, 0)},
		{"2026-01-02 15:04", local(2026, 1, 2, 15, 4, 0)},
		{"2026-01-02", local(2026, 1, 2, 0, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := timer.ParseTimeDate(tt.in, ber)
			require.NoError(t, err)
			requireInstant(t, tt.want, got)
		})
	}

	t.Run("nil location is UTC", func(t *testing.T) {
		t.Parallel()
		got, err := timer.ParseTimeDate("2026-01-02 15:04", nil)
		require.NoError(t, err)
		requireInstant(t, utc(2026, 1, 2, 15, 4, 0, 0), got)
	})
}

func TestParseTimeDateErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "   ", "tomorrow", "2026/01/02", "02.01.2026", "2026-13-01",
		"2026-02-30", "2026-01-02T25:00:00Z", "2026-01-02T15:04:05+25:00",
		"PT10M", "1767366245",
	} {
		t.Run(in, func(t *testing.T) {
			t.Parallel()
			_, err := timer.ParseTimeDate(in, time.UTC)
			require.Equal(t, in, requireScheduleError(t, err, "TimeDate"))
		})
	}
}

func TestParseCycleForms(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		in    string
		want  timer.Cycle // Calendar is checked separately
		isCal bool
	}{
		{in: "R5/PT10M", want: timer.Cycle{Repetitions: 5, Every: 10 * time.Minute}},
		{in: "r5/PT10M", want: timer.Cycle{Repetitions: 5, Every: 10 * time.Minute}},
		{in: "R/PT1H", want: timer.Cycle{Every: time.Hour}},
		{in: "R/P1D", want: timer.Cycle{Every: 24 * time.Hour}},
		{in: " R3/2026-01-01T09:00:00Z/P1D ", want: timer.Cycle{Repetitions: 3, Start: start, Every: 24 * time.Hour}},
		{in: "R3/2026-01-01T10:00:00+01:00/PT12H", want: timer.Cycle{Repetitions: 3, Start: start, Every: 12 * time.Hour}},
		{in: "R2/2026-01-01T09:00:00Z/2026-01-01T09:30:00Z", want: timer.Cycle{Repetitions: 2, Start: start, Every: 30 * time.Minute}},
		{in: "R/2026-01-01 09:00/PT1H", want: timer.Cycle{Start: start, Every: time.Hour}},
		{in: "PT30S", want: timer.Cycle{Every: 30 * time.Second}},
		{in: "P1DT12H", want: timer.Cycle{Every: 36 * time.Hour}},
		{in: "@every 1h30m", want: timer.Cycle{Every: 90 * time.Minute}},
		{in: "@every 1.5s", want: timer.Cycle{Every: 1500 * time.Millisecond}},
		{in: "0 9 * * 1-5", isCal: true},
		{in: "@daily", isCal: true},
		{in: "CRON_TZ=Europe/Berlin 0 9 * * *", isCal: true},
		{in: "TZ=Europe/Berlin\t0 9 * * *", isCal: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			c, err := timer.ParseCycle(tt.in, time.UTC)
			require.NoError(t, err)
			require.Equal(t, tt.isCal, c.Calendar != nil, "calendar cycle")
			require.Equal(t, tt.want.Repetitions, c.Repetitions)
			require.Equal(t, tt.want.Every, c.Every)
			requireInstant(t, tt.want.Start, c.Start)
		})
	}
}

func TestParseCycleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		field string // TimeCycle, or cron when the cron expression is at fault
	}{
		{"", "TimeCycle"},
		{"every hour", "TimeCycle"},
		{"R0/PT1H", "TimeCycle"},
		{"R/PT0S", "TimeCycle"},
		{"PT0S", "TimeCycle"},
		{"R5/", "TimeCycle"},
		{"R5/PT10M/", "TimeCycle"},
		{"R5//PT10M", "TimeCycle"},
		{"R5/soon", "TimeCycle"},
		{"R99999999999999999999/PT1H", "TimeCycle"},
		{"R-1/PT1H", "TimeCycle"},
		{"R5/PT10M/2026-01-01T00:00:00Z", "TimeCycle"},                // duration/end
		{"R5/2026-01-01T00:00:00Z/PT1H/PT2H", "TimeCycle"},            // too many parts
		{"R3/yesterday/P1D", "TimeCycle"},                             // bad start
		{"R3/2026-01-01T00:00:00Z/later", "TimeCycle"},                // bad interval
		{"R3/2026-01-02T00:00:00Z/2026-01-01T00:00:00Z", "TimeCycle"}, // end before start
		{"0 9 * *", "TimeCycle"},                                      // four fields
		{"0 9 * * * *", "TimeCycle"},                                  // six fields
		{"61 9 * * *", "TimeCycle"},
		{"@fortnightly", "TimeCycle"},
		{"CRON_TZ=Nowhere/Bogus 0 9 * * *", "cron"},
		{"CRON_TZ=UTC", "cron"}, // the cron library itself panics on this one
		{"CRON_TZ= 0 9 * * *", "cron"},
		{"CRON_TZ=UTC TZ=UTC 0 9 * * *", "cron"},
		{"@every -1h", "cron"},
		{"@every 10ms", "cron"},
		{"@every often", "TimeCycle"},
		{"0 0 30 2 *", "cron"}, // February 30th never comes
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			var c timer.Cycle
			require.NotPanics(t, func() {
				var err error
				c, err = timer.ParseCycle(tt.in, time.UTC)
				require.Equal(t, tt.in, requireScheduleError(t, err, tt.field))
			})
			require.Equal(t, timer.Cycle{}, c)
		})
	}

	t.Run("unknown zone unwraps to the zone error", func(t *testing.T) {
		t.Parallel()
		_, err := timer.ParseCycle("CRON_TZ=Nowhere/Bogus 0 9 * * *", time.UTC)
		var se *timer.ScheduleError
		require.ErrorAs(t, err, &se)
		require.Equal(t, "cron", se.Field)
		require.Error(t, se.Err)
		require.NotErrorIs(t, se.Err, timer.ErrBadSchedule, "the cause is the zone database's error")
	})
}

func TestCycleNextInterval(t *testing.T) {
	t.Parallel()
	armed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	bounded := timer.Cycle{Repetitions: 3, Every: 10 * time.Minute}
	unbounded := timer.Cycle{Every: time.Hour}
	withStart := timer.Cycle{Repetitions: 3, Start: start, Every: 24 * time.Hour}
	tests := []struct {
		name  string
		c     timer.Cycle
		fired int
		want  time.Time // zero: no firing
	}{
		{"bounded first", bounded, 0, armed.Add(10 * time.Minute)},
		{"bounded second", bounded, 1, armed.Add(20 * time.Minute)},
		{"bounded last", bounded, 2, armed.Add(30 * time.Minute)},
		{"bounded used up", bounded, 3, time.Time{}},
		{"bounded past the end", bounded, 7, time.Time{}},
		{"negative fired counts as none", bounded, -4, armed.Add(10 * time.Minute)},
		{"unbounded first", unbounded, 0, armed.Add(time.Hour)},
		{"unbounded far on", unbounded, 100000, armed.Add(100001 * time.Hour)},
		{"unbounded beyond time.Duration", unbounded, math.MaxInt, time.Time{}},
		{"start overrides armedAt", withStart, 0, start},
		{"start then every day", withStart, 2, start.Add(48 * time.Hour)},
		{"start used up", withStart, 3, time.Time{}},
		{"zero cycle never fires", timer.Cycle{}, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tt.c.Next(armed, tt.fired)
			require.Equal(t, !tt.want.IsZero(), ok)
			requireInstant(t, tt.want, got)
		})
	}

	t.Run("NextAfter adds the interval and ignores repetitions", func(t *testing.T) {
		t.Parallel()
		last, _ := bounded.Next(armed, 2)
		got, ok := bounded.NextAfter(last)
		require.True(t, ok)
		requireInstant(t, last.Add(10*time.Minute), got)
		_, ok = timer.Cycle{}.NextAfter(last)
		require.False(t, ok)
	})
}

// hours is a trivial calendar for tests: every whole hour.
type hours struct{}

func (hours) Next(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }

// never is a calendar without times.
type never struct{}

func (never) Next(time.Time) time.Time { return time.Time{} }

func TestCycleNextCalendar(t *testing.T) {
	t.Parallel()
	weekdays, err := timer.ParseCycle("0 9 * * 1-5", time.UTC)
	require.NoError(t, err)
	friday := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC) // a Friday
	day := func(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }

	tests := []struct {
		name    string
		c       timer.Cycle
		armedAt time.Time
		fired   int
		want    time.Time
	}{
		{"first weekday after armedAt", weekdays, friday, 0, day(5)},
		{"walks on", weekdays, friday, 1, day(6)},
		{"skips the weekend", weekdays, friday, 5, day(12)},
		{"strictly after armedAt", weekdays, day(5), 0, day(6)},
		{"bounded", timer.Cycle{Repetitions: 2, Calendar: hours{}}, friday, 1, friday.Add(2 * time.Hour)},
		{"bounded used up", timer.Cycle{Repetitions: 2, Calendar: hours{}}, friday, 2, time.Time{}},
		{"start: first time not before it", timer.Cycle{Start: day(5), Calendar: weekdays.Calendar}, friday, 0, day(5)},
		{"start: then on", timer.Cycle{Start: day(5), Calendar: weekdays.Calendar}, friday, 1, day(6)},
		{"calendar without times", timer.Cycle{Calendar: never{}}, friday, 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tt.c.Next(tt.armedAt, tt.fired)
			require.Equal(t, !tt.want.IsZero(), ok)
			requireInstant(t, tt.want, got)
		})
	}

	t.Run("NextAfter agrees with Next", func(t *testing.T) {
		t.Parallel()
		prev, ok := weekdays.Next(friday, 0)
		require.True(t, ok)
		for fired := 1; fired < 20; fired++ {
			want, ok := weekdays.Next(friday, fired)
			require.True(t, ok)
			got, ok := weekdays.NextAfter(prev)
			require.True(t, ok)
			requireInstant(t, want, got, fired)
			prev = got
		}
		_, ok = timer.Cycle{Calendar: never{}}.NextAfter(friday)
		require.False(t, ok)
	})

	t.Run("results are in the caller's location", func(t *testing.T) {
		t.Parallel()
		ber := berlin(t)
		got, ok := weekdays.Next(friday.In(ber), 0)
		require.True(t, ok)
		require.Equal(t, ber, got.Location())
	})
}

func TestCronDaylightSavingTime(t *testing.T) {
	t.Parallel()
	ber := berlin(t)
	utc := func(mo time.Month, d, h, mi int) time.Time { return time.Date(2026, mo, d, h, mi, 0, 0, time.UTC) }
	tests := []struct {
		name string
		expr string
		loc  *time.Location
		from time.Time
		want []time.Time
	}{
		{
			// Berlin leaves CET (+1) for CEST (+2) on 29 March 2026: nine
			// o'clock stays nine o'clock, an hour earlier in UTC.
			name: "spring: wall clock kept",
			expr: "CRON_TZ=Europe/Berlin 0 9 * * *", loc: time.UTC,
			from: utc(3, 27, 12, 0),
			want: []time.Time{utc(3, 28, 8, 0), utc(3, 29, 7, 0), utc(3, 30, 7, 0)},
		},
		{
			name: "autumn: wall clock kept",
			expr: "TZ=Europe/Berlin 0 9 * * *", loc: time.UTC,
			from: utc(10, 23, 12, 0),
			want: []time.Time{utc(10, 24, 7, 0), utc(10, 25, 8, 0), utc(10, 26, 8, 0)},
		},
		{
			name: "loc is the zone when there is no prefix",
			expr: "0 9 * * *", loc: ber,
			from: utc(3, 27, 12, 0),
			want: []time.Time{utc(3, 28, 8, 0), utc(3, 29, 7, 0), utc(3, 30, 7, 0)},
		},
		{
			name: "the prefix overrides loc",
			expr: "CRON_TZ=UTC 0 9 * * *", loc: ber,
			from: utc(3, 27, 12, 0),
			want: []time.Time{utc(3, 28, 9, 0), utc(3, 29, 9, 0)},
		},
		{
			// 02:30 does not exist on 29 March in Berlin: no firing that day.
			name: "spring: a missing time is skipped",
			expr: "CRON_TZ=Europe/Berlin 30 2 * * *", loc: time.UTC,
			from: utc(3, 27, 12, 0),
			want: []time.Time{utc(3, 28, 1, 30), utc(3, 30, 0, 30), utc(3, 31, 0, 30)},
		},
		{
			// 02:30 happens twice on 25 October in Berlin: fire at the
			// first (CEST, 00:30 UTC) only, not again an hour later.
			name: "autumn: a repeated time fires once",
			expr: "CRON_TZ=Europe/Berlin 30 2 * * *", loc: time.UTC,
			from: utc(10, 23, 12, 0),
			want: []time.Time{utc(10, 24, 0, 30), utc(10, 25, 0, 30), utc(10, 26, 1, 30)},
		},
		{
			name: "autumn: hourly skips the repeated hour",
			expr: "CRON_TZ=Europe/Berlin 0 * * * *", loc: time.UTC,
			from: utc(10, 24, 23, 30), // 01:30 CEST
			want: []time.Time{utc(10, 25, 0, 0), utc(10, 25, 2, 0), utc(10, 25, 3, 0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := timer.ParseCycle(tt.expr, tt.loc)
			require.NoError(t, err)
			for i, want := range tt.want {
				got, ok := c.Next(tt.from, i)
				require.True(t, ok)
				requireInstant(t, want, got, "firing", i+1)
			}
		})
	}

	t.Run("interval cycles keep real time, not wall-clock time", func(t *testing.T) {
		t.Parallel()
		c, err := timer.ParseCycle("R/2026-03-28T09:00:00/P1D", ber)
		require.NoError(t, err)
		second, ok := c.Next(time.Time{}, 1)
		require.True(t, ok)
		require.Equal(t, 10, second.In(ber).Hour(), "24 hours after 09:00 CET is 10:00 CEST")
	})
}

func TestCycleCatchUp(t *testing.T) {
	t.Parallel()
	armed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hourly := timer.Cycle{Every: time.Hour}
	r5 := timer.Cycle{Repetitions: 5, Every: time.Hour}
	start := armed.Add(-10 * 24 * time.Hour)
	dailyFromStart := timer.Cycle{Start: start, Every: 24 * time.Hour}
	daily, err := timer.ParseCycle("0 9 * * *", time.UTC)
	require.NoError(t, err)
	at9 := func(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }

	tests := []struct {
		name        string
		c           timer.Cycle
		fired       int
		now         time.Time
		wantDue     time.Time // zero: no firing left
		wantSkipped int
	}{
		{"nothing due yet", hourly, 0, armed.Add(30 * time.Minute), armed.Add(time.Hour), 0},
		{"due exactly now, nothing skipped", hourly, 0, armed.Add(time.Hour), armed.Add(time.Hour), 0},
		{"just after one due time", hourly, 2, armed.Add(3*time.Hour + time.Second), armed.Add(3 * time.Hour), 0},
		{"long gap: once for all", hourly, 2, armed.Add(10*time.Hour + 30*time.Minute), armed.Add(10 * time.Hour), 7},
		{"gap ending on a due time", hourly, 2, armed.Add(10 * time.Hour), armed.Add(10 * time.Hour), 7},
		{"a year down", hourly, 0, armed.Add(365 * 24 * time.Hour), armed.Add(365 * 24 * time.Hour), 365*24 - 1},
		{"bounded: stops at the last repetition", r5, 1, armed.Add(100 * time.Hour), armed.Add(5 * time.Hour), 3},
		{"bounded: partly missed", r5, 0, armed.Add(2*time.Hour + time.Minute), armed.Add(2 * time.Hour), 1},
		{"bounded: used up", r5, 5, armed.Add(100 * time.Hour), time.Time{}, 0},
		{"start before armedAt", dailyFromStart, 0, armed, armed, 10},
		{"calendar: nothing missed", daily, 0, at9(1).Add(-time.Hour), at9(1), 0},
		{"calendar: ten days missed", daily, 0, at9(10).Add(3 * time.Hour), at9(10), 9},
		{"calendar: after some firings", daily, 3, at9(10).Add(3 * time.Hour), at9(10), 6},
		{"calendar bounded", timer.Cycle{Repetitions: 4, Calendar: daily.Calendar}, 1, at9(20), at9(4), 2},
		{"calendar bounded used up", timer.Cycle{Repetitions: 4, Calendar: daily.Calendar}, 4, at9(20), time.Time{}, 0},
		{"calendar without times", timer.Cycle{Calendar: never{}}, 0, at9(20), time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			due, skipped, ok := tt.c.CatchUp(armed, tt.fired, tt.now)
			require.Equal(t, !tt.wantDue.IsZero(), ok)
			requireInstant(t, tt.wantDue, due)
			require.Equal(t, tt.wantSkipped, skipped)
			if !ok || due.After(tt.now) {
				return
			}
			// After the single catch-up firing the cycle goes on with its
			// first occurrence after now, on the original grid.
			next, more := tt.c.Next(armed, tt.fired+skipped+1)
			if more {
				require.True(t, next.After(tt.now), "next firing %s is after now", next)
				require.False(t, next.After(tt.now.Add(24*time.Hour)), "and the very next occurrence")
			}
		})
	}
}

func TestCycleUpcoming(t *testing.T) {
	t.Parallel()
	armed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hourly := timer.Cycle{Every: time.Hour}
	r3 := timer.Cycle{Repetitions: 3, Every: time.Hour}
	daily, err := timer.ParseCycle("0 9 * * *", time.UTC)
	require.NoError(t, err)
	at9 := func(d int) time.Time { return time.Date(2026, 1, d, 9, 0, 0, 0, time.UTC) }

	tests := []struct {
		name      string
		c         timer.Cycle
		fired     int
		now       time.Time
		wantDue   time.Time // zero: no firing left
		wantFired int
	}{
		{"on time: the next one", hourly, 1, armed.Add(time.Hour), armed.Add(2 * time.Hour), 1},
		{"late but nothing missed", hourly, 1, armed.Add(90 * time.Minute), armed.Add(2 * time.Hour), 1},
		{"missed ones count as fired", hourly, 1, armed.Add(5*time.Hour + time.Minute), armed.Add(6 * time.Hour), 5},
		{"bounded: the last one was just fired", r3, 3, armed.Add(3 * time.Hour), time.Time{}, 3},
		{"bounded: the rest were missed", r3, 1, armed.Add(10 * time.Hour), time.Time{}, 3},
		{"calendar: after a long stop", daily, 1, at9(5).Add(time.Hour), at9(6), 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			due, fired, ok := tt.c.Upcoming(armed, tt.fired, tt.now)
			require.Equal(t, !tt.wantDue.IsZero(), ok)
			requireInstant(t, tt.wantDue, due)
			if ok {
				require.True(t, due.After(tt.now), "never a time already passed")
				require.Equal(t, tt.wantFired, fired)
			}
		})
	}
}

// TestCycleCatchUpMatchesReference checks CatchUp against the plain
// definition: list the occurrences one by one, and fire once for those
// from number fired+1 that are not after now.
func TestCycleCatchUpMatchesReference(t *testing.T) {
	t.Parallel()
	armed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	horizon := armed.Add(30 * 24 * time.Hour)
	weekdays, err := timer.ParseCycle("CRON_TZ=Europe/Berlin 30 8 * * 1-5", time.UTC)
	require.NoError(t, err)
	cycles := map[string]timer.Cycle{
		"every 7m":                {Every: 7 * time.Minute},
		"R20 every 50m":           {Repetitions: 20, Every: 50 * time.Minute},
		"R10 from an early start": {Repetitions: 10, Start: armed.Add(-3 * time.Hour), Every: time.Hour},
		"weekdays in Berlin":      weekdays,
		"R15 hourly calendar":     {Repetitions: 15, Calendar: hours{}},
	}
	for name, c := range cycles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// All occurrences up to a day past the horizon.
			var occ []time.Time
			for o, ok := c.Next(armed, 0); ok && !o.After(horizon.Add(24*time.Hour)); o, ok = c.NextAfter(o) {
				if c.Repetitions > 0 && len(occ) == c.Repetitions {
					break
				}
				occ = append(occ, o)
			}
			reference := func(fired int, now time.Time) (time.Time, int, bool) {
				if fired >= len(occ) {
					return time.Time{}, 0, false
				}
				if occ[fired].After(now) {
					return occ[fired], 0, true
				}
				// The last occurrence not after now.
				last := sort.Search(len(occ), func(i int) bool { return occ[i].After(now) }) - 1
				return occ[last], last - fired, true
			}
			for _, fired := range []int{0, 1, 3, 9} {
				for now := armed; now.Before(horizon); now = now.Add(97 * time.Minute) {
					wantDue, wantSkipped, wantOK := reference(fired, now)
					due, skipped, ok := c.CatchUp(armed, fired, now)
					require.Equal(t, wantOK, ok, "fired %d now %s", fired, now)
					requireInstant(t, wantDue, due, "fired", fired, "now", now)
					require.Equal(t, wantSkipped, skipped, "fired %d now %s", fired, now)
				}
			}
		})
	}
}

func TestLimitDuration(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	tests := []struct {
		limit, unit string
		want        time.Duration
	}{
		{"3", "D", 3 * day},
		{"2", "", 2 * day}, // no DurationUnit: days
		{"2", "  ", 2 * day},
		{"1", "Y", 365 * day},
		{"1", "M", 30 * day},
		{"1.5", "h", 90 * time.Minute},
		{"90", "m", 90 * time.Minute},
		{"30", "s", 30 * time.Second},
		{"0.25", "s", 250 * time.Millisecond},
		{".5", "D", 12 * time.Hour},
		{"2.", "h", 2 * time.Hour},
		{" 4 ", " h ", 4 * time.Hour},
		{"0", "D", 0},
	}
	for _, tt := range tests {
		t.Run(tt.limit+" "+tt.unit, func(t *testing.T) {
			t.Parallel()
			got, err := timer.LimitDuration(tt.limit, tt.unit)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLimitDurationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit, unit, field string
	}{
		{"", "D", "Limit"},
		{"-1", "D", "Limit"},
		{"+1", "D", "Limit"},
		{"1e3", "D", "Limit"},
		{"NaN", "D", "Limit"},
		{"Inf", "D", "Limit"},
		{"0x10", "D", "Limit"},
		{"3 days", "D", "Limit"},
		{"P3D", "D", "Limit"},
		{"1,5", "D", "Limit"},
		{".", "D", "Limit"},
		{"300", "Y", "Limit"}, // longer than a time.Duration
		{"1", "d", "DurationUnit"},
		{"1", "W", "DurationUnit"},
		{"1", "days", "DurationUnit"},
	}
	for _, tt := range tests {
		t.Run(tt.limit+" "+tt.unit, func(t *testing.T) {
			t.Parallel()
			_, err := timer.LimitDuration(tt.limit, tt.unit)
			want := tt.limit
			if tt.field == "DurationUnit" {
				want = tt.unit
			}
			require.Equal(t, want, requireScheduleError(t, err, tt.field))
		})
	}
}
