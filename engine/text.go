package engine

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// TextError refuses a text argument the engine could not keep as it was
// given: text that is not valid UTF-8 (MySQL/MariaDB columns refuse it,
// and JSON would silently replace it), text with a NUL character
// (PostgreSQL's text columns refuse it; refused on every database, so
// that they all keep the same texts), or a name or key longer than the
// column that holds it (maxKey bytes). Nothing was changed. It matches
// ErrBadArgument, as the engine's other refusals of unusable arguments do.
type TextError struct {
	// Field names the argument: "StartOptions.BusinessKey", "Op.Actor",
	// "user", ...
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *TextError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrBadArgument, e.Field, e.Reason)
}

// Is matches ErrBadArgument.
func (e *TextError) Is(target error) bool { return target == ErrBadArgument }

// maxKey is the longest id, key or name an argument may be, in bytes:
// the VARCHAR(255) columns that hold them (business and idempotency keys,
// actors, users, principals, message ids).
const maxKey = 255

// maxErrorText is the most of an error or a diagnosis the engine keeps
// (instances' and activities' diagnoses, incidents): their TEXT columns
// hold 64 KiB on MySQL/MariaDB, and an application's error may be longer.
const maxErrorText = 16 << 10

// errorText is an error's text as the engine keeps it: valid UTF-8 (an
// invalid byte, and a NUL, replaced) and at most maxErrorText bytes.
func errorText(s string) string { return clip(s, maxErrorText) }

// checkText refuses s as field when it is not valid UTF-8, holds a NUL
// or, with max > 0, is longer than max bytes.
func checkText(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return &TextError{Field: field, Reason: "is not valid UTF-8"}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return &TextError{Field: field, Reason: "holds a NUL character (U+0000), which PostgreSQL cannot store in text"}
	}
	if max > 0 && len(s) > max {
		return &TextError{Field: field, Reason: fmt.Sprintf("is %d bytes long, longer than the %d it may be", len(s), max)}
	}
	return nil
}

// checkTexts checks several fields: field, value, field, value, ...; the
// first refusal wins.
func checkTexts(max int, fieldsAndValues ...string) error {
	for i := 0; i+1 < len(fieldsAndValues); i += 2 {
		if err := checkText(fieldsAndValues[i], fieldsAndValues[i+1], max); err != nil {
			return err
		}
	}
	return nil
}

// badValue says what a value (a variable's, an output's, Op.Data's) must
// be and is not, for the engine to keep it as it was given: its strings
// and map keys valid UTF-8, its floats finite (JSON has no NaN or
// infinity); "" when it is fine.
func badValue(v any) string {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return "text must be valid UTF-8"
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "numbers must be finite"
		}
	case float32:
		return badValue(float64(x))
	case []any:
		for _, e := range x {
			if why := badValue(e); why != "" {
				return why
			}
		}
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) {
				return "keys must be valid UTF-8"
			}
			if why := badValue(e); why != "" {
				return why
			}
		}
	case []string:
		for _, e := range x {
			if why := badValue(e); why != "" {
				return why
			}
		}
	}
	return ""
}
