package engine

import (
	"encoding/json"
	"errors"
	"time"
)

// RetryPolicy says how the engine retries an application's failing calls
// (errors the policy calls retryable): each retry rolls the step back and
// makes the call again after a backoff, with the same idempotency key.
// After MaxAttempts calls the activity goes Abnormal with an incident of
// cause CauseRetriesExhausted, for an operator to retry or skip; from
// IncidentAfter failed calls in a row the engine shows an incident of
// cause CauseFailing while it keeps retrying.
//
// Zero fields take the value of Config.RetryPolicy, and then of
// DefaultRetryPolicy.
type RetryPolicy struct {
	// MaxAttempts is the most calls, the first one included; negative
	// means no limit (retry forever). The calls that count are those
	// that failed: a delivery of the step lost to the database (a
	// conflict, a lost connection, also in the application's own
	// statement) is rolled back and tried again without using one.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry.
	InitialBackoff time.Duration
	// Multiplier grows the wait after each retry.
	Multiplier float64
	// MaxBackoff bounds the wait.
	MaxBackoff time.Duration
	// RetryIf says which errors are retried; default IsRetryable (those
	// marked with Retryable). Any other error is fatal at once.
	RetryIf func(error) bool
	// IncidentAfter is how many failed calls in a row open a CauseFailing
	// incident.
	IncidentAfter int
}

// DefaultRetryPolicy is the policy of applications registered without
// one, unless Config.RetryPolicy says otherwise: ten calls at most, the
// waits 100ms, 200ms, ... up to a minute (about 50 s in all), and an
// incident from the third failure.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:    10,
	InitialBackoff: 100 * time.Millisecond,
	Multiplier:     2,
	MaxBackoff:     time.Minute,
	RetryIf:        IsRetryable,
	IncidentAfter:  3,
}

// or fills p's zero fields from d.
func (p RetryPolicy) or(d RetryPolicy) RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.Multiplier < 1 {
		p.Multiplier = d.Multiplier
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	if p.RetryIf == nil {
		p.RetryIf = d.RetryIf
	}
	if p.IncidentAfter <= 0 {
		p.IncidentAfter = d.IncidentAfter
	}
	return p
}

// retries reports whether err is retried under p.
func (p RetryPolicy) retries(err error) bool {
	if p.RetryIf != nil {
		return p.RetryIf(err)
	}
	return IsRetryable(err)
}

// exhausted reports whether the attempt-th call was the last one.
func (p RetryPolicy) exhausted(attempt int) bool {
	return p.MaxAttempts > 0 && attempt >= p.MaxAttempts
}

// backoff is the wait after the attempt-th call failed.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := float64(p.InitialBackoff)
	for i := 1; i < attempt && d < float64(p.MaxBackoff); i++ {
		d *= p.Multiplier
	}
	return min(time.Duration(d), p.MaxBackoff)
}

// AppOption configures the registration of an application or a tool
// agent.
type AppOption func(*binding)

// WithRetry sets the retry policy of the application's calls; zero
// fields are taken from Config.RetryPolicy, then DefaultRetryPolicy.
func WithRetry(p RetryPolicy) AppOption {
	return func(b *binding) { b.policy = p }
}

// binding is what an application id or tool-agent class is bound to.
type binding struct {
	fn     ApplicationFunc
	policy RetryPolicy // as given; completed by Engine.policyOf
}

// policyOf is b's policy with its gaps filled.
func (e *Engine) policyOf(b binding) RetryPolicy {
	return b.policy.or(e.cfg.RetryPolicy).or(DefaultRetryPolicy)
}

// callError is a failed call of an application or hook: what an
// incident shows about it, and the policy that decides its retries.
type callError struct {
	app      string
	params   map[string]any
	policy   RetryPolicy
	activity int64  // the activity instance to show the failure on; 0 for none
	actDef   string // its XPDL id
	err      error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// paramsJSON encodes the call's parameters for an incident; nil when
// there are none or they do not encode.
func paramsJSON(params map[string]any) []byte {
	if len(params) == 0 {
		return nil
	}
	data, err := json.Marshal(params)
	if err != nil {
		return nil
	}
	return data
}

// asCallError finds the failed call in err.
func asCallError(err error) (*callError, bool) {
	var ce *callError
	ok := errors.As(err, &ce)
	return ce, ok
}
