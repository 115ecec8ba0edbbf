package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/xpdl"
)

// The console's own errors; engine errors keep theirs and are mapped to
// an HTTP status by classify.
var (
	// errBadRequest: a malformed form, query or body (400).
	errBadRequest = errors.New("bad request")
	// errReadOnly: a state change asked of a ReadOnly console (403).
	errReadOnly = errors.New("the console is read-only")
	// errNoPage: no page or resource at the path (404).
	errNoPage = errors.New("no such page")
	// errMethod: a method the path does not take (405).
	errMethod = errors.New("method not allowed")
	// errInternal: a failure that is not the caller's (500).
	errInternal = errors.New("internal error")
	// errTooLarge: a body larger than the console takes (413).
	errTooLarge = errors.New("request too large")
)

// fieldError is an input field the console refused (a value that does
// not parse by its variable's declared type, an unknown variable): 422,
// and the API's answer names the field.
type fieldError struct {
	// Field is the parameter, e.g. "variables.amount".
	Field string
	// Msg says what is wrong with it.
	Msg string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Msg }

// forbiddenError is Options.Authorize's refusal (403).
type forbiddenError struct{ reason string }

func (e *forbiddenError) Error() string { return "forbidden: " + e.reason }

// badRequest wraps a description of what is wrong with the request.
func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// requestError is a malformed request; it matches errBadRequest.
type requestError struct{ msg string }

func (e *requestError) Error() string        { return e.msg }
func (e *requestError) Is(target error) bool { return target == errBadRequest }

// apiError is the JSON body of every failed API request.
type apiError struct {
	// Code is a stable word for the kind of failure: bad_request,
	// forbidden, read_only, not_found, refused, conflict, invalid,
	// internal.
	Code string `json:"code"`
	// Message says what went wrong, for a person.
	Message string `json:"message"`
	// Problems lists an invalid definition's problems, each with its
	// line and column.
	Problems xpdl.Problems `json:"problems,omitempty"`
	// Field names the input refused ("variables.amount"), when one is.
	Field string `json:"field,omitempty"`
}

// classify maps an error to its HTTP status and API code.
func classify(err error) (int, apiError) {
	e := apiError{Message: err.Error()}
	var forbidden *forbiddenError
	var invalid *xpdl.ValidationError
	var syntax *xpdl.SyntaxError
	var limit *xpdl.LimitError
	var race *xpdl.RaceRegionError
	var field *fieldError
	var variable *engine.VariableError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &forbidden):
		return http.StatusForbidden, withCode(e, "forbidden")
	case errors.Is(err, errReadOnly):
		return http.StatusForbidden, withCode(e, "read_only")
	case errors.Is(err, errBadRequest), errors.Is(err, engine.ErrBadFilter),
		errors.Is(err, engine.ErrBadBatch), errors.Is(err, engine.ErrInvalidPurge),
		errors.Is(err, engine.ErrBadArgument): // a command's malformed argument (a lock key, an Op's data, nobody to reassign to)
		return http.StatusBadRequest, withCode(e, "bad_request")
	case errors.As(err, &tooLarge), errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge, withCode(e, "too_large")
	case errors.As(err, &invalid):
		e.Problems = invalid.Problems
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.As(err, &syntax):
		// Not XPDL at all: malformed XML, a hostile-input limit, a
		// DOCTYPE, another root element.
		e.Problems = xpdl.Problems{syntax.Problem()}
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.As(err, &limit):
		// Over a definition limit (docs/security.md): the one limit,
		// where the package exceeds it.
		e.Problems = xpdl.Problems{limit.Problem()}
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.As(err, &race):
		e.Problems = xpdl.RewriteProblems(race)
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.As(err, &field):
		e.Field = field.Field
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.As(err, &variable):
		e.Field = "variables." + variable.Name
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.Is(err, xpdl.ErrInvalid):
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.Is(err, engine.ErrUnknownVariable), errors.Is(err, engine.ErrWrongType),
		errors.Is(err, engine.ErrEmptyProcess), errors.Is(err, engine.ErrAmbiguousProcess),
		errors.Is(err, engine.ErrBadTimer): // a definition's timer that cannot be worked out, or repeats too often
		return http.StatusUnprocessableEntity, withCode(e, "invalid")
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, withCode(e, "method_not_allowed")
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, errNoPage):
		return http.StatusNotFound, withCode(e, "not_found")
	case errors.Is(err, engine.ErrConflict):
		return http.StatusConflict, withCode(e, "conflict")
	case errors.Is(err, engine.ErrIllegalState), errors.Is(err, engine.ErrInstanceFinished),
		errors.Is(err, engine.ErrCannotSkip), errors.Is(err, engine.ErrCannotMove),
		errors.Is(err, engine.ErrCannotMigrate), errors.Is(err, engine.ErrLocked),
		errors.Is(err, engine.ErrWrongInstance), errors.Is(err, engine.ErrNotAllowed),
		errors.Is(err, engine.ErrKeyReused), errors.Is(err, engine.ErrNotRetried),
		errors.Is(err, engine.ErrCompletedDifferently):
		return http.StatusConflict, withCode(e, "refused")
	case errors.Is(err, engine.ErrNotRunning):
		return http.StatusServiceUnavailable, withCode(e, "unavailable")
	}
	e.Message = "internal error (see the server's log)"
	return http.StatusInternalServerError, withCode(e, "internal")
}

func withCode(e apiError, code string) apiError {
	e.Code = code
	return e
}
