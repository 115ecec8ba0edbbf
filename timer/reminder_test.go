package timer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/timer"
)

func TestParseReminderPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in        string
		want      timer.ReminderPolicy // Calendar is checked separately
		wantCal   bool
		escalates bool
	}{
		{
			in:      "cron=0 9 * * 1-5; after=P1D; max=5; escalate=3; to=role:manager",
			want:    timer.ReminderPolicy{After: 24 * time.Hour, Max: 5, Escalate: 3, To: resource.Participant{ID: "manager", Kind: resource.KindRole}},
			wantCal: true,
		},
		{
			in:   "every=PT4H",
			want: timer.ReminderPolicy{After: 4 * time.Hour, Every: 4 * time.Hour}, // after defaults to every
		},
		{
			in:   "every=PT4H; after=PT30M; max=0",
			want: timer.ReminderPolicy{After: 30 * time.Minute, Every: 4 * time.Hour},
		},
		{
			in:   "every = 4 hours ; after = 0",
			want: timer.ReminderPolicy{Every: 4 * time.Hour},
		},
		{
			in:   "cron=@every 2h; escalate=1; to=user:alice",
			want: timer.ReminderPolicy{After: 2 * time.Hour, Every: 2 * time.Hour, Escalate: 1, To: resource.Participant{ID: "alice", Kind: resource.KindHuman}},
		},
		{
			in:      "CRON=CRON_TZ=Europe/Berlin 0 9 * * *\nTo=unit:sales-east\nESCALATE=2\n",
			want:    timer.ReminderPolicy{Escalate: 2, To: resource.Participant{ID: "sales-east", Kind: resource.KindOrgUnit}},
			wantCal: true,
		},
		{
			in:   "after=P2D;",
			want: timer.ReminderPolicy{After: 48 * time.Hour, Max: 1}, // a single reminder
		},
		{
			in:   "after=P2D; max=1",
			want: timer.ReminderPolicy{After: 48 * time.Hour, Max: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			p, err := timer.ParseReminderPolicy(tt.in, time.UTC)
			require.NoError(t, err)
			require.Equal(t, tt.wantCal, p.Calendar != nil, "calendar pace")
			p.Calendar = nil
			require.Equal(t, tt.want, p)
		})
	}
}

func TestParseReminderPolicyErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, key string
	}{
		{"", ""},
		{" ; \n ", ""},
		{"every PT4H", ""},
		{"often=yes", "often"},
		{"every=PT1H; every=PT2H", "every"},
		{"every=PT1H; cron=@daily", "every"},
		{"every=soon", "every"},
		{"every=PT0S", "every"},
		{"every=", "every"},
		{"after=tomorrow; every=PT1H", "after"},
		{"after=PT0S", "after"},
		{"max=3", "after"}, // a single reminder needs after
		{"after=P1D; max=3", "max"},
		{"after=P1D; max=0", "max"},
		{"every=PT1H; max=-1", "max"},
		{"every=PT1H; max=two", "max"},
		{"cron=0 9 * *", "cron"},
		{"cron=CRON_TZ=Nowhere/Bogus 0 9 * * *", "cron"},
		{"every=PT1H; escalate=2", "escalate"},
		{"every=PT1H; to=role:boss", "to"},
		{"every=PT1H; escalate=0; to=role:boss", "escalate"},
		{"every=PT1H; escalate=x; to=role:boss", "escalate"},
		{"every=PT1H; max=2; escalate=3; to=role:boss", "escalate"},
		{"every=PT1H; escalate=1; to=group:boss", "to"},
		{"every=PT1H; escalate=1; to=role:", "to"},
		{"every=PT1H; escalate=1; to=boss", "to"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			p, err := timer.ParseReminderPolicy(tt.in, time.UTC)
			require.ErrorIs(t, err, timer.ErrBadReminder)
			var re *timer.ReminderError
			require.ErrorAs(t, err, &re)
			require.Equal(t, tt.key, re.Key)
			require.Equal(t, tt.in, re.Input)
			require.NotEmpty(t, re.Reason)
			require.Equal(t, timer.ReminderPolicy{}, p)
		})
	}

	t.Run("a bad cron expression is a schedule error too", func(t *testing.T) {
		t.Parallel()
		_, err := timer.ParseReminderPolicy("cron=0 0 30 2 *", time.UTC)
		require.ErrorIs(t, err, timer.ErrBadReminder)
		require.ErrorIs(t, err, timer.ErrBadSchedule)
	})
}

func TestReminderPolicyNext(t *testing.T) {
	t.Parallel()
	mustParse := func(s string) timer.ReminderPolicy {
		p, err := timer.ParseReminderPolicy(s, time.UTC)
		require.NoError(t, err)
		return p
	}
	jan := func(d, h, m int) time.Time { return time.Date(2026, 1, d, h, m, 0, 0, time.UTC) }
	friday := jan(2, 10, 0) // the work began waiting on a Friday morning

	weekdays := mustParse("cron=0 9 * * 1-5; after=P1D; max=5")
	fourHourly := mustParse("every=PT4H; max=3")
	late := mustParse("every=PT4H; after=P1D")
	once := mustParse("after=P2D")
	cronNoAfter := mustParse("cron=0 9 * * *")

	tests := []struct {
		name  string
		p     timer.ReminderPolicy
		start time.Time // zero: friday
		sent  int
		last  time.Time
		want  time.Time // zero: no more reminders
	}{
		{"cron: first after the delay", weekdays, time.Time{}, 0, time.Time{}, jan(5, 9, 0)}, // Saturday 10:00 at the earliest: Monday
		{"cron: then from the previous one", weekdays, time.Time{}, 1, jan(5, 9, 0).Add(7 * time.Second), jan(6, 9, 0)},
		{"cron: a late reminder does not double up", weekdays, time.Time{}, 2, jan(7, 16, 0), jan(8, 9, 0)},
		{"cron: last unknown counts on time", weekdays, time.Time{}, 2, time.Time{}, jan(7, 9, 0)},
		{"cron: max reached", weekdays, time.Time{}, 5, jan(9, 9, 0), time.Time{}},
		{"cron: strictly after start", cronNoAfter, time.Time{}, 0, time.Time{}, jan(3, 9, 0)},
		{"cron: start at a schedule time", cronNoAfter, jan(2, 9, 0), 0, time.Time{}, jan(3, 9, 0)},
		{"every: first one interval in", fourHourly, time.Time{}, 0, time.Time{}, friday.Add(4 * time.Hour)},
		{"every: from the previous one", fourHourly, time.Time{}, 1, friday.Add(5 * time.Hour), friday.Add(9 * time.Hour)},
		{"every: last unknown counts on time", fourHourly, time.Time{}, 2, time.Time{}, friday.Add(12 * time.Hour)},
		{"every: max reached", fourHourly, time.Time{}, 3, friday.Add(13 * time.Hour), time.Time{}},
		{"every: after delays the first", late, time.Time{}, 0, time.Time{}, friday.Add(24 * time.Hour)},
		{"every: after the first, every", late, time.Time{}, 1, friday.Add(24 * time.Hour), friday.Add(28 * time.Hour)},
		{"every: unlimited", late, time.Time{}, 1000, friday.Add(2000 * time.Hour), friday.Add(2004 * time.Hour)},
		{"once: after the delay", once, time.Time{}, 0, time.Time{}, friday.Add(48 * time.Hour)},
		{"once: only once", once, time.Time{}, 1, friday.Add(48 * time.Hour), time.Time{}},
		{"negative sent counts as none", fourHourly, time.Time{}, -1, time.Time{}, friday.Add(4 * time.Hour)},
		{"calendar without times", timer.ReminderPolicy{Calendar: never{}}, time.Time{}, 0, time.Time{}, time.Time{}},
		{"hand-made single reminder without max", timer.ReminderPolicy{After: time.Hour}, time.Time{}, 1, friday.Add(time.Hour), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := tt.start
			if start.IsZero() {
				start = friday
			}
			got, ok := tt.p.Next(start, tt.sent, tt.last)
			require.Equal(t, !tt.want.IsZero(), ok)
			requireInstant(t, tt.want, got)
		})
	}

	t.Run("after downtime one overdue reminder, then the pace resumes", func(t *testing.T) {
		t.Parallel()
		p := mustParse("every=PT4H")
		due, ok := p.Next(friday, 1, friday.Add(4*time.Hour))
		require.True(t, ok)
		now := friday.Add(72 * time.Hour) // the engine was down for days
		require.True(t, due.Before(now), "overdue: the caller reminds at once")
		next, ok := p.Next(friday, 2, now) // sent at now
		require.True(t, ok)
		requireInstant(t, now.Add(4*time.Hour), next)
	})

	t.Run("cron reminders keep the zone's wall clock", func(t *testing.T) {
		t.Parallel()
		p := mustParse("cron=CRON_TZ=Europe/Berlin 0 9 * * *")
		start := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
		first, ok := p.Next(start, 0, time.Time{})
		require.True(t, ok)
		requireInstant(t, time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC), first) // 09:00 CEST
	})
}

func TestReminderPolicyEscalateNow(t *testing.T) {
	t.Parallel()
	p, err := timer.ParseReminderPolicy("every=P1D; escalate=3; to=role:manager", time.UTC)
	require.NoError(t, err)
	for sent, want := range []bool{false, false, false, true, false, false} {
		require.Equal(t, want, p.EscalateNow(sent), "after %d reminders", sent)
	}
	never, err := timer.ParseReminderPolicy("every=P1D", time.UTC)
	require.NoError(t, err)
	for sent := range 5 {
		require.False(t, never.EscalateNow(sent))
	}
}
