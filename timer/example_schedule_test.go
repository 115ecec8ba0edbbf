package timer_test

import (
	"fmt"
	"time"

	"github.com/goxpdl/goxpdl/timer"
)

func ExampleParseTimeDate() {
	for _, s := range []string{"2026-05-04T09:30:00+02:00", "2026-05-04 09:30", "2026-05-04"} {
		t, err := timer.ParseTimeDate(s, time.UTC) // zone-less forms are in UTC here
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(t.UTC().Format(time.RFC3339))
	}
	_, err := timer.ParseTimeDate("next Tuesday", time.UTC)
	fmt.Println(err)
	// Output:
	// 2026-05-04T07:30:00Z
	// 2026-05-04T09:30:00Z
	// 2026-05-04T00:00:00Z
	// timer: bad TimeDate "next Tuesday": not a date and time such as "2026-01-02T15:04:05Z", "2026-01-02 15:04" or "2026-01-02"
}

func ExampleParseCycle() {
	armedAt := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC) // a Friday
	for _, s := range []string{
		"R3/PT10M",                          // three times, ten minutes apart
		"R2/2026-01-05T08:00:00Z/P1D",       // twice, from a start date
		"CRON_TZ=Europe/Berlin 0 9 * * 1-5", // weekdays at nine, Berlin time
	} {
		c, err := timer.ParseCycle(s, time.UTC)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s)
		for fired := 0; ; fired++ {
			due, ok := c.Next(armedAt, fired)
			if !ok || fired == 3 {
				break
			}
			fmt.Println("  ", due.UTC().Format("Mon 2006-01-02 15:04"))
		}
	}
	// Output:
	// R3/PT10M
	//    Fri 2026-01-02 10:10
	//    Fri 2026-01-02 10:20
	//    Fri 2026-01-02 10:30
	// R2/2026-01-05T08:00:00Z/P1D
	//    Mon 2026-01-05 08:00
	//    Tue 2026-01-06 08:00
	// CRON_TZ=Europe/Berlin 0 9 * * 1-5
	//    Mon 2026-01-05 08:00
	//    Tue 2026-01-06 08:00
	//    Wed 2026-01-07 08:00
}

// A repeating timer after downtime: the occurrences missed while the
// engine was down fire once, together, and the cycle carries on with its
// first occurrence after now.
func ExampleCycle_CatchUp() {
	c, err := timer.ParseCycle("R/PT1H", time.UTC)
	if err != nil {
		panic(err)
	}
	armedAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fired := 2                                          // it fired at 01:00 and 02:00, then the engine stopped
	now := time.Date(2026, 1, 1, 7, 20, 0, 0, time.UTC) // and came back at 07:20

	due, skipped, ok := c.CatchUp(armedAt, fired, now)
	if ok && !due.After(now) {
		fmt.Printf("fire once now for the %s occurrence, standing for %d skipped ones\n", due.Format("15:04"), skipped)
		fired += 1 + skipped
	}
	next, _ := c.Next(armedAt, fired)
	fmt.Println("fired:", fired, "next:", next.Format("15:04"))
	// Output:
	// fire once now for the 07:00 occurrence, standing for 4 skipped ones
	// fired: 7 next: 08:00
}

func ExampleLimitDuration() {
	d, err := timer.LimitDuration("1.5", "h")
	fmt.Println(d, err)
	d, err = timer.LimitDuration("2", "") // no DurationUnit: days
	fmt.Println(d, err)
	// Output:
	// 1h30m0s <nil>
	// 48h0m0s <nil>
}

func ExampleParseReminderPolicy() {
	p, err := timer.ParseReminderPolicy("cron=0 9 * * 1-5; after=P1D; max=5; escalate=2; to=role:manager", time.UTC)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC) // the work began waiting on a Friday
	var last time.Time
	for sent := 0; ; sent++ {
		due, ok := p.Next(start, sent, last)
		if !ok {
			fmt.Println("no more reminders")
			break
		}
		fmt.Println("remind", due.Format("Mon 01-02 15:04"))
		last = due // sent on time
		if p.EscalateNow(sent + 1) {
			fmt.Println("escalate to", p.To.Kind, p.To.ID)
		}
	}

	_, err = timer.ParseReminderPolicy("every=PT4H; max=many", time.UTC)
	fmt.Println(err)
	// Output:
	// remind Mon 01-05 09:00
	// remind Tue 01-06 09:00
	// escalate to ROLE manager
	// remind Wed 01-07 09:00
	// remind Thu 01-08 09:00
	// remind Fri 01-09 09:00
	// no more reminders
	// timer: bad reminder policy "every=PT4H; max=many": key "max": not a whole number of at least 0
}
