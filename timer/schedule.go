package timer

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/goxpdl/goxpdl/xpdl"
)

// This file holds the pure side of timers: reading the times, cycles and
// limits an XPDL process writes down, and working out when they are due.
// Nothing here reads a clock, sleeps or starts a goroutine; every "now" is
// an argument.

// ErrBadSchedule is matched (with errors.Is) by every *ScheduleError: a
// TimeDate, TimeCycle, cron expression, Limit or DurationUnit that cannot
// be read.
var ErrBadSchedule = errors.New("timer: bad schedule")

// ScheduleError says which time expression could not be read and why. It
// matches ErrBadSchedule, and unwraps to the underlying parse error when
// there is one.
type ScheduleError struct {
	// Field names what was being read: "TimeDate", "TimeCycle", "cron",
	// "Limit" or "DurationUnit".
	Field string
	// Input is the text as given.
	Input string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any (from time.Parse, the cron
	// parser or time.LoadLocation).
	Err error
}

// Error implements error.
func (e *ScheduleError) Error() string {
	msg := fmt.Sprintf("timer: bad %s %q: %s", e.Field, e.Input, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrBadSchedule.
func (e *ScheduleError) Is(target error) bool { return target == ErrBadSchedule }

// Unwrap returns the underlying error.
func (e *ScheduleError) Unwrap() error { return e.Err }

func scheduleErr(field, input, reason string, err error) *ScheduleError {
	return &ScheduleError{Field: field, Input: input, Reason: reason, Err: err}
}

// timeDateZoned are the TimeDate layouts that carry their own zone.
// time.Parse accepts a fractional second after the seconds even when the
// layout has none, so these cover "…:05.123Z" as well.
var timeDateZoned = []string{
	time.RFC3339,                // 2026-01-02T15:04:05Z, …+01:00
	"2006-01-02 15:04:05Z07:00", // the same with a space
	"2006-01-02T15:04:05Z0700",  // Java's SimpleDateFormat "Z": +0100
}

// timeDateLocal are the TimeDate layouts without a zone; they are read in
// the caller's location.
var timeDateLocal = []string{
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTimeDate reads an XPDL 2 TimerTrigger TimeDate, the fixed time a
// timer event fires at, in the forms modelling tools write:
//
//   - RFC 3339, with or without fractional seconds: "2026-01-02T15:04:05Z",
//     "2026-01-02T15:04:05.250+01:00" (also with a space instead of the T,
//     or an offset without a colon, "+0100");
//   - without a zone, read in loc: "2026-01-02T15:04:05",
//     "2026-01-02 15:04:05", "2026-01-02T15:04", "2026-01-02 15:04" and
//     "2026-01-02" (midnight).
//
// A nil loc means UTC. Leading and trailing space is ignored. Anything else
// is a *ScheduleError.
func ParseTimeDate(s string, loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	in := strings.TrimSpace(s)
	if in == "" {
		return time.Time{}, scheduleErr("TimeDate", s, "empty", nil)
	}
	for _, layout := range timeDateZoned {
		if t, err := time.Parse(layout, in); err == nil {
			return t, nil
		}
	}
	for _, layout := range timeDateLocal {
		if t, err := time.ParseInLocation(layout, in, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, scheduleErr("TimeDate", s,
		`not a date and time such as "2026-01-02T15:04:05Z", "2026-01-02 15:04" or "2026-01-02"`, nil)
}

// Schedule is a calendar: the times a cron expression names. It is the
// seam between goxpdl and the cron library, so that tests can put a
// trivial schedule in a Cycle or a ReminderPolicy.
type Schedule interface {
	// Next returns the schedule's first time strictly after t, or the zero
	// time when it has none.
	Next(t time.Time) time.Time
}

// ParseCron reads a cron expression: the standard five fields (minute,
// hour, day of month, month, day of week, as in "0 9 * * 1-5") or a
// descriptor (@yearly, @monthly, @weekly, @daily, @hourly, "@every 1h30m"),
// optionally after a time zone prefix "CRON_TZ=Europe/Berlin " or
// "TZ=Europe/Berlin ". Without a prefix the schedule is read in loc (nil
// means UTC). Zone names need the zone database: the system's, or
// time/tzdata linked into the program.
//
// The times are wall-clock times in the schedule's zone, so "0 9 * * *"
// fires at nine o'clock local time on both sides of a daylight saving
// change. Around such a change:
//
//   - a time that does not exist on the day clocks go forward (02:30 in
//     Europe/Berlin on the last Sunday of March) does not fire that day;
//   - a time that occurs twice on the day clocks go back fires once, at
//     its first occurrence.
//
// The schedule must name at least one time within five years of the start
// of 2001 (so "0 0 30 2 *", February 30th, is an error), and Next returns
// the zero time when a schedule has no time within five years of its
// argument: the cron library searches no further.
func ParseCron(s string, loc *time.Location) (Schedule, error) {
	sched, every, err := parseCron(s, loc)
	if err != nil {
		return nil, err
	}
	if every > 0 {
		return everySchedule(every), nil
	}
	return sched, nil
}

// everySchedule is "@every d" as a Schedule: d after the time given.
type everySchedule time.Duration

func (e everySchedule) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// parseCron reads a cron expression. "@every d" comes back as every = d,
// so that callers can treat it as a fixed interval (exact arithmetic, no
// walking); anything else comes back as a Schedule.
func parseCron(s string, loc *time.Location) (sched Schedule, every time.Duration, err error) {
	if loc == nil {
		loc = time.UTC
	}
	spec := strings.TrimSpace(s)
	if spec == "" {
		return nil, 0, scheduleErr("cron", s, "empty", nil)
	}
	// The zone prefix is read here rather than by the cron library: it
	// slices out of range (panics) on a prefix with nothing after it, needs
	// a space rather than any white space, and without a prefix it would
	// use the zone of each time it is given rather than loc.
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		name, rest, _ := strings.Cut(spec[strings.IndexByte(spec, '=')+1:], " ")
		if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
			name, rest = name[:i], name[i:]+" "+rest
		}
		rest = strings.TrimSpace(rest)
		if name == "" || rest == "" {
			return nil, 0, scheduleErr("cron", s, "a time zone prefix needs a zone name and then a schedule", nil)
		}
		zone, lerr := time.LoadLocation(name)
		if lerr != nil {
			return nil, 0, scheduleErr("cron", s, "unknown time zone "+strconv.Quote(name), lerr)
		}
		loc, spec = zone, rest
	}
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		return nil, 0, scheduleErr("cron", s, "more than one time zone prefix", nil)
	}
	parsed, perr := cron.ParseStandard(spec)
	if perr != nil {
		return nil, 0, scheduleErr("cron", s, reasonNotCron, perr)
	}
	if _, ok := parsed.(cron.ConstantDelaySchedule); ok {
		// The library turns any duration under a second, negative ones
		// included, into one second, and drops fractions of a second;
		// refuse the first and keep the duration as written.
		d, derr := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(spec, "@every")))
		if derr != nil || d < time.Second {
			return nil, 0, scheduleErr("cron", s, "@every needs a duration of at least 1s", derr)
		}
		return nil, d, nil
	}
	cs := cronSchedule{s: parsed, loc: loc}
	if cs.Next(time.Date(2001, 1, 1, 0, 0, 0, 0, loc)).IsZero() {
		return nil, 0, scheduleErr("cron", s, "names no date that exists", nil)
	}
	return cs, 0, nil
}

// reasonNotCron is the Reason of a ScheduleError from the cron library
// refusing an expression (rather than from its zone prefix).
const reasonNotCron = "not a cron expression"

// cronSchedule is a schedule from the cron library, read in loc.
type cronSchedule struct {
	s   cron.Schedule
	loc *time.Location
}

// Next returns the schedule's next time after t, in t's location. A
// wall-clock time that occurs twice (when clocks go back) is taken at its
// first occurrence only; the library would fire at both.
func (c cronSchedule) Next(t time.Time) time.Time {
	n := c.s.Next(t.In(c.loc))
	for !n.IsZero() && repeatedWallClock(n) {
		n = c.s.Next(n)
	}
	if n.IsZero() {
		return n
	}
	return n.In(t.Location())
}

// repeatedWallClock reports whether the wall-clock reading of t (in its
// own location) was already shown once, earlier, because clocks went back
// in the twelve hours before t.
func repeatedWallClock(t time.Time) bool {
	_, before := t.Add(-12 * time.Hour).Zone()
	_, now := t.Zone()
	if before <= now {
		return false
	}
	earlier := t.Add(-time.Duration(before-now) * time.Second)
	return sameWallClock(earlier, t)
}

func sameWallClock(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	ah, amin, as := a.Clock()
	bh, bmin, bs := b.Clock()
	return ay == by && am == bm && ad == bd && ah == bh && amin == bmin && as == bs
}

// Cycle is an XPDL 2 TimerTrigger TimeCycle: when a repeating timer fires.
// It is either an interval cycle (Every > 0: a fixed length of time between
// firings) or a calendar cycle (Calendar != nil: the times of a cron
// expression). The zero Cycle never fires. Read one with ParseCycle.
//
// A caller keeps two things for an armed cycle: armedAt, when it was armed,
// and fired, how many firings have happened (or been skipped by CatchUp).
type Cycle struct {
	// Repetitions is how many times the cycle fires in all; 0 means
	// without end.
	Repetitions int
	// Start, when set, is the first possible due time and takes the place
	// of the time the cycle was armed: an interval cycle fires first at
	// Start, then every Every; a calendar cycle fires first at its first
	// time not before Start. When zero, the first firing is Every after,
	// or the first calendar time strictly after, the time it was armed.
	Start time.Time
	// Every is the interval between firings of an interval cycle.
	Every time.Duration
	// Calendar gives the firing times of a calendar cycle.
	Calendar Schedule
}

var repeating = regexp.MustCompile(`^[Rr](\d*)/(.+)$`)

// ParseCycle reads an XPDL 2 TimerTrigger TimeCycle in any of these forms:
//
//   - an ISO 8601 repeating interval "Rn/duration": "R5/PT10M" fires five
//     times, ten minutes apart, the first ten minutes after it is armed;
//     "R/PT1H" (no n) fires every hour without end;
//   - with a start, "Rn/start/duration": "R3/2026-01-01T09:00:00Z/P1D"
//     fires at 09:00 UTC on 1, 2 and 3 January 2026, whenever it was
//     armed; the start may be in any form ParseTimeDate reads, and one
//     without a zone is in loc;
//   - "Rn/start/end": the same, with end minus start as the interval;
//   - a bare duration "PT30S": every 30 seconds without end;
//   - a cron expression, as ParseCron reads it, with loc as its default
//     zone: "0 9 * * 1-5", "@daily", "CRON_TZ=Europe/Berlin 0 9 * * *".
//     "@every 1h" is the interval cycle "R/PT1H".
//
// Durations are read by xpdl.ParseDuration, so they are fixed lengths: a
// day is 24 hours and a month 30 days, whatever the calendar says. An
// interval cycle therefore keeps its pace in real time, and its
// wall-clock time moves by an hour across a daylight saving change; use a
// cron expression with a zone for "nine o'clock every day". The interval
// must be positive, and "R0" (never) and the ISO form "Rn/duration/end"
// are refused. A nil loc means UTC. Anything it cannot read is a
// *ScheduleError.
func ParseCycle(s string, loc *time.Location) (Cycle, error) {
	if loc == nil {
		loc = time.UTC
	}
	in := strings.TrimSpace(s)
	if in == "" {
		return Cycle{}, scheduleErr("TimeCycle", s, "empty", nil)
	}
	if m := repeating.FindStringSubmatch(in); m != nil {
		return parseRepeating(s, m[1], m[2], loc)
	}
	if d, ok := xpdl.ParseDuration(in); ok {
		if d <= 0 {
			return Cycle{}, scheduleErr("TimeCycle", s, "the interval must be longer than zero", nil)
		}
		return Cycle{Every: d}, nil
	}
	sched, every, err := parseCron(in, loc)
	if err != nil {
		var se *ScheduleError
		if errors.As(err, &se) && se.Reason == reasonNotCron {
			return Cycle{}, scheduleErr("TimeCycle", s,
				"neither a repeating interval (R5/PT10M), a duration (PT30S) nor a cron expression (0 9 * * 1-5)", se.Err)
		}
		return Cycle{}, err
	}
	if every > 0 {
		return Cycle{Every: every}, nil
	}
	return Cycle{Calendar: sched}, nil
}

// parseRepeating reads the part of "Rn/…" after "R": count is n (possibly
// empty) and rest what follows the first slash.
func parseRepeating(s, count, rest string, loc *time.Location) (Cycle, error) {
	var c Cycle
	if count != "" {
		n, err := strconv.Atoi(count)
		if err != nil {
			return Cycle{}, scheduleErr("TimeCycle", s, "the repetition count is too large", err)
		}
		if n == 0 {
			return Cycle{}, scheduleErr("TimeCycle", s, "R0 never fires", nil)
		}
		c.Repetitions = n
	}
	parts := strings.Split(rest, "/")
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return Cycle{}, scheduleErr("TimeCycle", s, "an empty part between slashes", nil)
		}
	}
	switch len(parts) {
	case 1:
		d, ok := xpdl.ParseDuration(parts[0])
		if !ok {
			return Cycle{}, scheduleErr("TimeCycle", s, "not a duration: "+strconv.Quote(parts[0]), nil)
		}
		c.Every = d
	case 2:
		if _, ok := xpdl.ParseDuration(parts[0]); ok {
			return Cycle{}, scheduleErr("TimeCycle", s, "the form Rn/duration/end is not supported; write Rn/start/duration", nil)
		}
		start, err := ParseTimeDate(parts[0], loc)
		if err != nil {
			return Cycle{}, scheduleErr("TimeCycle", s, "bad start "+strconv.Quote(parts[0]), err)
		}
		c.Start = start
		if d, ok := xpdl.ParseDuration(parts[1]); ok {
			c.Every = d
		} else if end, err := ParseTimeDate(parts[1], loc); err == nil {
			c.Every = end.Sub(start)
		} else {
			return Cycle{}, scheduleErr("TimeCycle", s, "neither a duration nor an end: "+strconv.Quote(parts[1]), nil)
		}
	default:
		return Cycle{}, scheduleErr("TimeCycle", s, "too many parts: a repeating interval is Rn/duration or Rn/start/duration", nil)
	}
	if c.Every <= 0 {
		return Cycle{}, scheduleErr("TimeCycle", s, "the interval must be longer than zero", nil)
	}
	return c, nil
}

// Next returns the due time of firing number fired+1 of a cycle armed at
// armedAt, where fired counts the firings so far (a negative fired counts
// as 0). It reports false when the cycle has fired Repetitions times, has
// no further calendar time, or is the zero Cycle.
//
// For an interval cycle the answer is exact arithmetic: Start + fired ×
// Every with a Start, armedAt + (fired+1) × Every without. For a calendar
// cycle, firing 1 is the first calendar time strictly after armedAt (or
// not before Start), and Next walks the calendar from there, so its cost
// grows with fired: a caller that keeps the previous due time should ask
// NextAfter(previous) instead.
//
// The result may lie in the past: a cycle whose Start is before armedAt,
// or one picked up again after downtime. CatchUp says what to do then.
func (c Cycle) Next(armedAt time.Time, fired int) (time.Time, bool) {
	fired = max(fired, 0)
	if c.usedUp(fired) {
		return time.Time{}, false
	}
	switch {
	case c.Every > 0:
		return c.intervalAt(armedAt, fired)
	case c.Calendar != nil:
		t, ok := c.firstCalendar(armedAt)
		for i := 0; ok && i < fired; i++ {
			t, ok = c.NextAfter(t)
		}
		return t, ok
	}
	return time.Time{}, false
}

// NextAfter returns the cycle's next due time after t, where t is the due
// time of the previous firing: t + Every for an interval cycle, the first
// calendar time strictly after t for a calendar cycle. It does not count
// firings: the caller checks Repetitions. It reports false when a calendar
// has no further time, and for the zero Cycle.
func (c Cycle) NextAfter(t time.Time) (time.Time, bool) {
	switch {
	case c.Every > 0:
		return t.Add(c.Every), true
	case c.Calendar != nil:
		n := c.Calendar.Next(t)
		return n, !n.IsZero()
	}
	return time.Time{}, false
}

// CatchUp says what a repeating timer does at now, after firing fired times
// since it was armed at armedAt. It is the engine's catch-up rule for
// repeating timers, for when the engine was down (or busy) past one or
// more due times:
//
//   - The occurrences that fell due while nobody was firing are not fired
//     one by one. They are fired ONCE, at once, together: due is the
//     latest of them (not after now) and skipped is how many earlier ones
//     that single firing stands for. The caller fires once and adds
//     skipped+1 to fired.
//   - Skipped occurrences count towards Repetitions, so a cycle never
//     fires more often, or later into the calendar, than it would have
//     without the downtime; in particular a bounded cycle whose
//     occurrences all passed fires once and is done.
//   - After that the cycle carries on with its first occurrence after
//     now, on its original grid: the next firing is Next(armedAt, fired)
//     (or NextAfter(due)), which is after now. The schedule is not shifted
//     to start again from now.
//   - When nothing was missed, due is the next occurrence (after now) and
//     skipped is 0: the caller arms a timer for due.
//
// So a caller fires when due is not after now and arms a timer for due
// otherwise. ok is false when the cycle has no further firing at all
// (Repetitions reached, no further calendar time). The same rule applies
// to a cycle whose Start lies before armedAt: its past occurrences are
// fired once, together. The cost is constant for an interval cycle and
// grows with fired and the number of missed occurrences for a calendar
// cycle.
func (c Cycle) CatchUp(armedAt time.Time, fired int, now time.Time) (due time.Time, skipped int, ok bool) {
	fired = max(fired, 0)
	due, ok = c.Next(armedAt, fired)
	if !ok || due.After(now) {
		return due, 0, ok
	}
	if c.Every > 0 {
		// Occurrence k (0-based) is due at first + k×Every; find the last
		// one not after now.
		first, _ := c.intervalAt(armedAt, 0)
		last := int64(now.Sub(first) / c.Every)
		if c.Repetitions > 0 {
			last = min(last, int64(c.Repetitions-1))
		}
		last = min(last, math.MaxInt-1)
		due, _ = c.intervalAt(armedAt, int(last))
		return due, int(last) - fired, true
	}
	for c.Repetitions == 0 || fired+skipped+1 < c.Repetitions {
		n, more := c.NextAfter(due)
		if !more || n.After(now) {
			break
		}
		due = n
		skipped++
	}
	return due, skipped, true
}

// Upcoming returns the cycle's next firing after now, for a cycle armed
// at armedAt that has fired fired times (the firing that just happened
// included). Occurrences that fell due at or before now are not returned:
// they count as fired (CatchUp's rule, seen from just after a firing), and
// firedBefore is fired plus those skipped, the count to keep with the
// returned due time. ok is false when the cycle has no firing left.
func (c Cycle) Upcoming(armedAt time.Time, fired int, now time.Time) (due time.Time, firedBefore int, ok bool) {
	fired = max(fired, 0)
	due, skipped, ok := c.CatchUp(armedAt, fired, now)
	if !ok || due.After(now) {
		return due, fired, ok
	}
	fired += skipped + 1
	if c.usedUp(fired) {
		return time.Time{}, fired, false
	}
	due, ok = c.NextAfter(due)
	return due, fired, ok
}

func (c Cycle) usedUp(fired int) bool { return c.Repetitions > 0 && fired >= c.Repetitions }

// intervalAt returns the due time of occurrence k (0-based) of an interval
// cycle, false when it is beyond what a time.Duration can hold.
func (c Cycle) intervalAt(armedAt time.Time, k int) (time.Time, bool) {
	base, steps := c.Start, int64(k)
	if c.Start.IsZero() {
		if steps == math.MaxInt64 {
			return time.Time{}, false
		}
		base, steps = armedAt, steps+1
	}
	if steps > 0 && int64(c.Every) > math.MaxInt64/steps {
		return time.Time{}, false
	}
	return base.Add(time.Duration(steps) * c.Every), true
}

func (c Cycle) firstCalendar(armedAt time.Time) (time.Time, bool) {
	from := armedAt
	if !c.Start.IsZero() {
		from = c.Start.Add(-time.Nanosecond)
	}
	n := c.Calendar.Next(from)
	return n, !n.IsZero()
}

// durationUnits are the XPDL DurationUnit values, with years and months of
// fixed length as xpdl.ParseDuration counts them.
var durationUnits = map[string]time.Duration{
	"Y": 365 * 24 * time.Hour,
	"M": 30 * 24 * time.Hour,
	"D": 24 * time.Hour,
	"h": time.Hour,
	"m": time.Minute,
	"s": time.Second,
}

var limitNumber = regexp.MustCompile(`^(?:\d+(?:\.\d*)?|\.\d+)$`)

// LimitDuration converts an XPDL Limit (of an activity or a process) into a
// duration. The Limit is a number, possibly with a decimal point ("3",
// "1.5"), counted in the DurationUnit of the process header: Y (a year of
// 365 days), M (a month of 30 days), D (days), h (hours), m (minutes) or s
// (seconds); the units are case-sensitive, so "M" is months and "m"
// minutes.
//
// An empty unit means days. The XPDL schemas (1.0, 2.0, 2.1 and 2.2)
// declare DurationUnit as an optional attribute of ProcessHeader limited
// to those six values, with no default value and no annotation, and the
// Limit element as a plain string; so the spec leaves the unit of a header
// without one open, and goxpdl takes D.
//
// A zero Limit gives a zero duration; whether that means "no limit" is the
// caller's decision. A Limit that is not a plain non-negative number (a
// sign, an exponent, a unit of its own), an unknown unit, or a duration too
// long for time.Duration is a *ScheduleError.
func LimitDuration(limit, unit string) (time.Duration, error) {
	u := strings.TrimSpace(unit)
	if u == "" {
		u = "D"
	}
	per, ok := durationUnits[u]
	if !ok {
		return 0, scheduleErr("DurationUnit", unit, "not one of Y, M, D, h, m, s", nil)
	}
	l := strings.TrimSpace(limit)
	if !limitNumber.MatchString(l) {
		return 0, scheduleErr("Limit", limit, "not a non-negative number such as 3 or 1.5", nil)
	}
	f, err := strconv.ParseFloat(l, 64)
	if err != nil {
		return 0, scheduleErr("Limit", limit, "not a number", err)
	}
	d := math.Round(f * float64(per))
	if d >= math.MaxInt64 {
		return 0, scheduleErr("Limit", limit, "too long a time in unit "+u, nil)
	}
	return time.Duration(d), nil
}
