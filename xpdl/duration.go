package xpdl

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a deadline or timer written as a constant duration,
// in the forms real XPDL files use:
//
//   - integer milliseconds: "5000";
//   - ISO-8601 durations: "PT0.2S", "PT30S", "P3D", "P1DT12H", "P2W";
//   - a number and a unit: "3 days", "90 min", "1.5 hours", "2w".
//
// Years and months in ISO form count as 365 and 30 days. It reports false
// for anything else (a JavaScript expression, say), and for negative or
// overflowing durations.
func ParseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
			return 0, false
		}
		return time.Duration(ms) * time.Millisecond, true
	}
	if d, ok := parseISODuration(s); ok {
		return d, true
	}
	return parseUnitDuration(s)
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$`)

func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, false
	}
	day := 24 * time.Hour
	units := []time.Duration{365 * day, 30 * day, 7 * day, day, time.Hour, time.Minute, time.Second}
	var total float64
	any := false
	for i, unit := range units {
		if m[i+1] == "" {
			continue
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(m[i+1], ",", "."), 64)
		if err != nil {
			return 0, false
		}
		total += f * float64(unit)
		any = true
	}
	return toDuration(total, any)
}

var unitDuration = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([a-zA-Z]+)$`)

var unitNames = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

func parseUnitDuration(s string) (time.Duration, bool) {
	m := unitDuration.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	unit, ok := unitNames[strings.ToLower(m[2])]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return toDuration(f*float64(unit), true)
}

func toDuration(nanos float64, valid bool) (time.Duration, bool) {
	if !valid || nanos < 0 || nanos >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(nanos), true
}
