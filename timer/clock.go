package timer

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Everything in goxpdl that needs
// the time or waits for it goes through a Clock, so that tests can use a
// Fake and never sleep.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d
	// has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped
	// the timer (false when it had already fired or been stopped).
	Stop() bool
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Fake is a Clock that moves only when Advance or Set is called. Timers
// fire, in order of their due time, when the fake time reaches them. It is
// safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced when timers are added
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time has moved d past
// now. A timer with d <= 0 fires at once.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, due: f.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.fired = true
		t.c <- f.now
		return t
	}
	f.timers = append(f.timers, t)
	close(f.changed)
	f.changed = make(chan struct{})
	return t
}

// Advance moves the fake time forward by d and fires every timer that is
// due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the fake time to t (never backwards) and fires every timer
// that is due.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.setLocked(t)
	}
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].due.Before(f.timers[j].due) })
	kept := f.timers[:0]
	for _, tm := range f.timers {
		if tm.due.After(t) {
			kept = append(kept, tm)
			continue
		}
		tm.fired = true
		tm.c <- tm.due
	}
	clear(f.timers[len(kept):])
	f.timers = kept
}

// Waiters returns how many timers are armed and have not fired.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// TimerAdded returns a channel that is closed when the next timer is
// armed, so a test can wait for a goroutine to start waiting instead of
// sleeping.
func (f *Fake) TimerAdded() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

type fakeTimer struct {
	clock *Fake
	due   time.Time
	c     chan time.Time
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, tm := range f.timers {
		if tm == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			t.fired = true
			return true
		}
	}
	return false
}
