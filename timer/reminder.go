package timer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/xpdl"
)

// ErrBadReminder is matched (with errors.Is) by every *ReminderError.
var ErrBadReminder = errors.New("timer: bad reminder policy")

// ReminderError says which key of a reminder policy is wrong and why. It
// matches ErrBadReminder; when the value held a bad duration or cron
// expression it also unwraps to that *ScheduleError (so it matches
// ErrBadSchedule too).
type ReminderError struct {
	// Input is the policy text as given.
	Input string
	// Key is the offending key ("cron", "max", …), or "" when the fault is
	// not in one key (an empty policy, a part without "=").
	Key string
	// Reason says what is wrong.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *ReminderError) Error() string {
	msg := fmt.Sprintf("timer: bad reminder policy %q: ", e.Input)
	if e.Key != "" {
		msg += "key " + strconv.Quote(e.Key) + ": "
	}
	msg += e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrBadReminder.
func (e *ReminderError) Is(target error) bool { return target == ErrBadReminder }

// Unwrap returns the underlying error.
func (e *ReminderError) Unwrap() error { return e.Err }

// ReminderPolicy says when to remind the performers of overdue or waiting
// work, and when to escalate it. An activity carries one as the value of
// an extended attribute; ParseReminderPolicy reads it.
//
// Reminders come in one of three paces: on a calendar (Calendar set), at a
// fixed interval (Every set), or once (neither).
type ReminderPolicy struct {
	// After is how long after the work began waiting the first reminder
	// may come, at the earliest.
	After time.Duration
	// Every is the interval between reminders, measured from the previous
	// reminder. Zero unless the pace is an interval.
	Every time.Duration
	// Calendar gives the reminder times when the pace is a calendar: the
	// first is its first time strictly after start + After, each later one
	// its first time strictly after the previous reminder. Nil otherwise.
	Calendar Schedule
	// Max is how many reminders are sent at most; 0 means until the work
	// is done.
	Max int
	// Escalate is how many reminders are sent before the work is escalated
	// to To; 0 means never.
	Escalate int
	// To is who the work is escalated to: a user (Kind resource.KindHuman),
	// a role (resource.KindRole) or an organisational unit
	// (resource.KindOrgUnit), for a resource.Directory to resolve. It is
	// set exactly when Escalate is.
	To resource.Participant
}

// principalKinds maps the prefixes of the "to" key to participant kinds.
var principalKinds = map[string]resource.ParticipantKind{
	"user": resource.KindHuman,
	"role": resource.KindRole,
	"unit": resource.KindOrgUnit,
}

// ParseReminderPolicy reads a reminder policy. It is a list of key=value
// pairs separated by semicolons (or new lines); keys are case-insensitive,
// space around keys and values is ignored, and each key may appear once:
//
//	cron=0 9 * * 1-5; after=P1D; max=5; escalate=3; to=role:manager
//
// The keys are:
//
//	after=DURATION   the first reminder comes no sooner than this after the
//	                 work began waiting (default: 0 with cron, the interval
//	                 with every);
//	every=DURATION   remind at this interval, counted from the previous
//	                 reminder;
//	cron=EXPRESSION  remind at the times of a cron expression, as ParseCron
//	                 reads it, with loc as its default zone (a nil loc is
//	                 UTC); "@every d" is the same as every=d;
//	max=N            send at most N reminders (default 0: until the work
//	                 is done);
//	escalate=N       once N reminders have been sent, escalate the work to
//	                 the principal named by to;
//	to=KIND:ID       that principal: user:ID, role:ID or unit:ID.
//
// Durations are ISO 8601 ("PT4H", "P1D") or anything else
// xpdl.ParseDuration reads ("4 hours"). At most one of every and cron may
// be given; with neither, there is a single reminder at start + after, so
// after must then be positive and max, if given, 1. escalate and to come
// together, and escalate may not exceed a non-zero max (it would never be
// reached). Anything else is a *ReminderError naming the key at fault.
func ParseReminderPolicy(s string, loc *time.Location) (ReminderPolicy, error) {
	fail := func(key, reason string, err error) (ReminderPolicy, error) {
		return ReminderPolicy{}, &ReminderError{Input: s, Key: key, Reason: reason, Err: err}
	}
	vals := map[string]string{}
	for part := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return fail("", fmt.Sprintf("%q is not key=value", strings.TrimSpace(part)), nil)
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		switch k {
		case "after", "every", "cron", "max", "escalate", "to":
		default:
			return fail(k, "unknown key; the keys are after, every, cron, max, escalate and to", nil)
		}
		if _, dup := vals[k]; dup {
			return fail(k, "given twice", nil)
		}
		if v == "" {
			return fail(k, "no value", nil)
		}
		vals[k] = v
	}
	if len(vals) == 0 {
		return fail("", "empty", nil)
	}

	var p ReminderPolicy
	duration := func(key string) (time.Duration, error) {
		d, ok := xpdl.ParseDuration(vals[key])
		if !ok {
			return 0, &ReminderError{Input: s, Key: key, Reason: "not a duration such as PT4H or P1D"}
		}
		return d, nil
	}
	count := func(key string, least int) (int, error) {
		n, err := strconv.Atoi(vals[key])
		if err != nil || n < least {
			return 0, &ReminderError{Input: s, Key: key, Reason: fmt.Sprintf("not a whole number of at least %d", least)}
		}
		return n, nil
	}
	var err error
	_, hasAfter := vals["after"]
	if hasAfter {
		if p.After, err = duration("after"); err != nil {
			return ReminderPolicy{}, err
		}
	}
	if _, ok := vals["every"]; ok {
		if _, both := vals["cron"]; both {
			return fail("every", "give every or cron, not both", nil)
		}
		if p.Every, err = duration("every"); err != nil {
			return ReminderPolicy{}, err
		}
		if p.Every <= 0 {
			return fail("every", "the interval must be longer than zero", nil)
		}
	}
	if expr, ok := vals["cron"]; ok {
		cal, every, cerr := parseCron(expr, loc)
		if cerr != nil {
			return fail("cron", "bad cron expression", cerr)
		}
		p.Calendar, p.Every = cal, every
	}
	if p.Every > 0 && !hasAfter {
		p.After = p.Every
	}
	if _, ok := vals["max"]; ok {
		if p.Max, err = count("max", 0); err != nil {
			return ReminderPolicy{}, err
		}
	}
	if p.Every == 0 && p.Calendar == nil {
		if p.After <= 0 {
			return fail("after", "a single reminder (no every or cron) needs a positive after", nil)
		}
		if _, ok := vals["max"]; ok && p.Max != 1 {
			return fail("max", "more than one reminder needs every or cron", nil)
		}
		p.Max = 1
	}
	_, hasEscalate := vals["escalate"]
	to, hasTo := vals["to"]
	switch {
	case hasEscalate && !hasTo:
		return fail("escalate", "needs to=KIND:ID to say whom to escalate to", nil)
	case hasTo && !hasEscalate:
		return fail("to", "needs escalate=N to say when to escalate", nil)
	case hasEscalate:
		if p.Escalate, err = count("escalate", 1); err != nil {
			return ReminderPolicy{}, err
		}
		if p.Max > 0 && p.Escalate > p.Max {
			return fail("escalate", fmt.Sprintf("%d is more than max=%d reminders, so it would never happen", p.Escalate, p.Max), nil)
		}
		kind, id, _ := strings.Cut(to, ":")
		pk, ok := principalKinds[strings.ToLower(strings.TrimSpace(kind))]
		id = strings.TrimSpace(id)
		if !ok || id == "" {
			return fail("to", "not user:ID, role:ID or unit:ID", nil)
		}
		p.To = resource.Participant{ID: id, Kind: pk}
	}
	return p, nil
}

// Next returns the due time of reminder number sent+1, for work that began
// waiting at start (when it became due, or was started) and whose previous
// reminder went out at last (zero when none has). It reports false once
// Max reminders have been sent.
//
//   - The first reminder is due at start + After with an interval or a
//     single reminder, and at the first calendar time strictly after
//     start + After with a calendar.
//   - Each later one is due Every after last, or at the first calendar
//     time strictly after last. Counting from when the previous reminder
//     was actually sent means that after downtime the overdue reminder
//     goes out once, at once, and the pace resumes from then: reminders
//     never pile up. When last is zero although sent > 0 (the caller did
//     not keep it), the reminders are counted from the first due time
//     instead, as if each had been sent on time.
//
// The result may be in the past; the caller then reminds at once.
func (p ReminderPolicy) Next(start time.Time, sent int, last time.Time) (time.Time, bool) {
	sent = max(sent, 0)
	if p.Max > 0 && sent >= p.Max {
		return time.Time{}, false
	}
	first, ok := p.first(start)
	if !ok || sent == 0 {
		return first, ok
	}
	if !last.IsZero() {
		return p.after(last)
	}
	t := first
	for i := 0; ok && i < sent; i++ {
		t, ok = p.after(t)
	}
	return t, ok
}

// EscalateNow reports whether the work is to be escalated to To now that
// sent reminders have been sent: true exactly once, when sent equals
// Escalate.
func (p ReminderPolicy) EscalateNow(sent int) bool {
	return p.Escalate > 0 && sent == p.Escalate
}

func (p ReminderPolicy) first(start time.Time) (time.Time, bool) {
	earliest := start.Add(p.After)
	if p.Calendar != nil {
		t := p.Calendar.Next(earliest)
		return t, !t.IsZero()
	}
	return earliest, true
}

// after returns the reminder due after one sent at t.
func (p ReminderPolicy) after(t time.Time) (time.Time, bool) {
	switch {
	case p.Calendar != nil:
		n := p.Calendar.Next(t)
		return n, !n.IsZero()
	case p.Every > 0:
		return t.Add(p.Every), true
	}
	return time.Time{}, false // a single reminder has no second
}
