package xpdl

import (
	"errors"
	"fmt"
	"strings"
)

// Severity tells an error (the definition cannot be deployed) from a
// warning (it can, but probably not as its author meant).
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding of the reader or the validator.
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity"`
	// Code names the rule, e.g. "duplicate-id"; stable, for tools and tests.
	Code    string `json:"code"`
	Message string `json:"message"`
	// IDs are the ids of the elements involved, most specific first.
	IDs []string `json:"ids,omitempty"`
}

// String formats the problem as FILE:LINE:COL: severity: message.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	fmt.Fprintf(&b, ":%d:%d: ", p.Line, p.Col)
	if p.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is a list of problems in the order they were found.
type Problems []Problem

// HasErrors reports whether any problem is an error.
func (ps Problems) HasErrors() bool {
	for _, p := range ps {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns the problems that are errors.
func (ps Problems) Errors() Problems { return ps.filter(SeverityError) }

// Warnings returns the problems that are warnings.
func (ps Problems) Warnings() Problems { return ps.filter(SeverityWarning) }

func (ps Problems) filter(s Severity) Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == s {
			out = append(out, p)
		}
	}
	return out
}

// Err returns a *ValidationError holding all problems when at least one
// is an error, and nil otherwise.
func (ps Problems) Err() error {
	if !ps.HasErrors() {
		return nil
	}
	return &ValidationError{Problems: ps}
}

// ValidationError is returned when a definition has errors. It carries
// every problem found, warnings included.
type ValidationError struct {
	Problems Problems
}

func (e *ValidationError) Error() string {
	errs := e.Problems.Errors()
	if len(errs) == 1 {
		return "invalid XPDL: " + errs[0].String()
	}
	return fmt.Sprintf("invalid XPDL: %d errors, first: %s", len(errs), errs[0].String())
}

// Is makes errors.Is(err, ErrInvalid) true for every *ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Sentinel errors callers branch on.
var (
	// ErrInvalid matches every *ValidationError and every *SyntaxError: the
	// input is not a usable XPDL definition.
	ErrInvalid = errors.New("invalid XPDL")
	// ErrTooLarge is wrapped by a SyntaxError when the input is larger
	// than ReadOpts.MaxBytes.
	ErrTooLarge = errors.New("input too large")
	// ErrTooDeep is wrapped when elements nest deeper than ReadOpts.MaxDepth.
	ErrTooDeep = errors.New("elements nested too deeply")
	// ErrTooManyAttrs is wrapped when an element has more attributes than
	// ReadOpts.MaxAttrs.
	ErrTooManyAttrs = errors.New("too many attributes")
	// ErrTooManyElements is wrapped when the document has more elements
	// than ReadOpts.MaxElements.
	ErrTooManyElements = errors.New("too many elements")
	// ErrDOCTYPE is wrapped when the input has a DOCTYPE declaration;
	// XPDL needs none, and entity definitions are an attack vector.
	ErrDOCTYPE = errors.New("DOCTYPE declarations are not accepted")
	// ErrNotXPDL is wrapped when the root element is not an XPDL Package.
	ErrNotXPDL = errors.New("not an XPDL package")
	// ErrMalformed is wrapped when the input is not well-formed XML.
	ErrMalformed = errors.New("malformed XML")
)

// SyntaxError is a failure to read a document at all: malformed XML, a
// hostile-input limit, or a root that is not an XPDL Package. It wraps
// one of the sentinel errors above.
type SyntaxError struct {
	File string
	Pos  Pos
	Msg  string
	Err  error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// Unwrap returns the sentinel the error wraps.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalid) true for every *SyntaxError.
func (e *SyntaxError) Is(target error) bool { return target == ErrInvalid }

// Problem returns the error as a Problem, so that callers can report read
// failures and validation findings alike.
func (e *SyntaxError) Problem() Problem {
	code := "syntax"
	switch {
	case errors.Is(e.Err, ErrTooLarge), errors.Is(e.Err, ErrTooDeep),
		errors.Is(e.Err, ErrTooManyAttrs), errors.Is(e.Err, ErrTooManyElements):
		code = "limit"
	case errors.Is(e.Err, ErrDOCTYPE):
		code = "doctype"
	case errors.Is(e.Err, ErrNotXPDL):
		code = "not-xpdl"
	}
	return Problem{File: e.File, Line: e.Pos.Line, Col: e.Pos.Col, Severity: SeverityError, Code: code, Message: e.Msg}
}
