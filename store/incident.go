package store

import "time"

// Incident is something an operator must look at: an activity that
// failed (Abnormal), an application that keeps failing, or a process
// that is Locking. At most one incident is open per subject (an activity
// instance, or the process instance itself when ActivityInstanceID is
// nil); a new failure of the same subject updates it.
type Incident struct {
	// ID is the caller's (the engine's, package idgen) for a new
	// incident; a failure recorded on an open incident keeps the open
	// incident's ID.
	ID int64
	// ProcessInstanceID is the instance the incident is in.
	ProcessInstanceID int64
	// ActivityInstanceID is the activity instance that failed; nil for an
	// incident of the process as a whole (Locking).
	ActivityInstanceID *int64
	// ActivityDefID is the XPDL id of that activity; "" when none.
	ActivityDefID string
	// Cause classifies the incident (the engine's IncidentCause values).
	Cause string
	// Error is the failure's text, the last one for a repeated failure.
	Error string
	// Application is the XPDL Application whose call failed, if any.
	Application string
	// Params holds the JSON of the call's parameters, if any.
	Params []byte
	// Attempts counts the failures: the calls made of a failing
	// application, 1 for a single failure.
	Attempts int
	// FirstFailureAt and LastFailureAt bound the failures.
	FirstFailureAt time.Time
	LastFailureAt  time.Time
	// State is IncidentOpen or IncidentResolved.
	State string
	// ResolvedAt, ResolvedBy and Resolution say when, by whom and how an
	// incident was resolved ("retried", "skipped", "terminated",
	// "succeeded", ...); empty while open.
	ResolvedAt *time.Time
	ResolvedBy string
	Resolution string
}

// Incident states.
const (
	// IncidentOpen marks an incident that waits for an operator.
	IncidentOpen = "open"
	// IncidentResolved marks an incident that is over.
	IncidentResolved = "resolved"
)

// ResolveIncidentsParams are the arguments of Tx.ResolveIncidents.
type ResolveIncidentsParams struct {
	// ProcessInstanceID is the instance whose open incidents are
	// resolved; required.
	ProcessInstanceID int64
	// ActivityInstanceIDs, when not empty, resolves only the incidents of
	// these activity instances; ProcessLevel adds the incident of the
	// process itself. With neither, every open incident of the instance
	// is resolved.
	ActivityInstanceIDs []int64
	ProcessLevel        bool
	// At, By and Resolution are recorded on each incident.
	At         time.Time
	By         string
	Resolution string
}

// ListIncidentsParams filter Tx.ListIncidents. Zero fields do not
// filter. Pages are walked by passing the last ID of a page as AfterID of
// the next.
type ListIncidentsParams struct {
	// ProcessInstanceID, when not 0, keeps only that instance's.
	ProcessInstanceID int64
	// ActivityInstanceID, when not 0, keeps only that activity's.
	ActivityInstanceID int64
	// States, when not empty, keeps only incidents in these states.
	States []string
	// Causes, when not empty, keeps only incidents of these causes.
	Causes []string
	// AfterID keeps only incidents whose ID is greater.
	AfterID int64
	// Limit, when greater than 0, is the most incidents returned.
	Limit int
}
