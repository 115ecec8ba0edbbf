package engine

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// Overview is the state of the whole database at a glance: what the
// console's dashboard shows. Every figure is read from the database, so
// it covers every engine node sharing it; the pools and group commits of
// this process are in Stats.
type Overview struct {
	// At is the engine clock's time of the reading.
	At time.Time `json:"at"`
	// States counts the process instances (top-level and subflows) by
	// state, and Total all of them.
	States map[wftype.ProcessState]int64 `json:"states"`
	Total  int64                         `json:"total"`
	// Definitions counts them by deployment and process, in package,
	// version and process order.
	Definitions []DefinitionCount `json:"definitions"`
	// Minutes are the last hour, minute by minute, oldest first: 60 of
	// them, the last being the minute of At.
	Minutes []MinuteCount `json:"minutes"`
	// Incidents counts the open incidents by cause.
	Incidents map[IncidentCause]int64 `json:"incidents"`
	// Events is the outbox's backlog.
	Events EventBacklog `json:"events"`
	// Timers counts the pending timers.
	Timers TimerCounts `json:"timers"`
	// Nodes are the engine nodes registered on the database (Nodes).
	Nodes []Node `json:"nodes"`
	// Database names the database.
	Database DatabaseInfo `json:"database"`
}

// DefinitionCount counts the instances of one process of one deployment.
type DefinitionCount struct {
	DefinitionID int64  `json:"definition"`
	Package      string `json:"package"`
	Version      int    `json:"version"`
	Process      string `json:"process"`
	ProcessName  string `json:"processName,omitempty"`
	// States counts the instances by state, and Total all of them.
	States map[wftype.ProcessState]int64 `json:"states"`
	Total  int64                         `json:"total"`
}

// MinuteCount is what happened to process instances in one minute.
type MinuteCount struct {
	// Minute is the minute's start, in UTC.
	Minute time.Time `json:"minute"`
	// Started counts the instances started in it; Completed, Terminated
	// and Locked those that ended in it in that state.
	Started    int64 `json:"started"`
	Completed  int64 `json:"completed"`
	Terminated int64 `json:"terminated"`
	Locked     int64 `json:"locked"`
}

// EventBacklog describes the events in the outbox that no node has
// processed yet.
type EventBacklog struct {
	// Unprocessed counts them, claimed or not; More says there are more
	// than that (the count stops at OverviewCountCap).
	Unprocessed int64 `json:"unprocessed"`
	More        bool  `json:"more,omitempty"`
	// Oldest is when the first of them (in outbox order) was written,
	// and Lag how long ago that was by the engine clock: how far event
	// processing is behind. An event waiting for the retry of a failed
	// processing counts too. Nil and 0 when there is none.
	Oldest *time.Time    `json:"oldest,omitempty"`
	Lag    time.Duration `json:"lag"`
}

// TimerCounts counts the pending timers.
type TimerCounts struct {
	// Due counts those due now (they fire at once, or are late), Pending
	// all of them; More says a count stopped at OverviewCountCap.
	Due     int64 `json:"due"`
	Pending int64 `json:"pending"`
	More    bool  `json:"more,omitempty"`
}

// DatabaseInfo names the database behind the engine.
type DatabaseInfo struct {
	// Dialect is "sqlite", "mysql" (MySQL or MariaDB) or "postgres".
	Dialect string `json:"dialect"`
	// Version is the server's version, as it reports it.
	Version string `json:"version"`
}

// OverviewCountCap is where Overview stops counting events and timers:
// counting reads every row counted, and past this many the exact number
// matters less than the page staying fast.
const OverviewCountCap = 10_000

// Overview reads the dashboard's figures. The counts per state and
// definition come from counts the store keeps with every change of an
// instance (store.Tx.CountProcessInstanceGroups), not from a scan of the
// instances, so they cost the same at a million instances as at ten; the
// rest are range scans of indexes (docs/engine.md, "Reading instances").
func (e *Engine) Overview(ctx context.Context) (Overview, error) {
	now := e.now()
	o := Overview{
		At: now, States: map[wftype.ProcessState]int64{}, Incidents: map[IncidentCause]int64{},
		Database: DatabaseInfo{Dialect: e.store.Capabilities().Dialect},
	}
	var err error
	if o.Definitions, err = e.definitionCounts(ctx); err != nil {
		return Overview{}, err
	}
	for _, d := range o.Definitions {
		for s, n := range d.States {
			o.States[s] += n
		}
		o.Total += d.Total
	}
	if o.Minutes, err = e.minutes(ctx, now); err != nil {
		return Overview{}, err
	}
	if o.Incidents, err = e.IncidentCounts(ctx); err != nil {
		return Overview{}, err
	}
	backlog, err := e.store.EventBacklog(ctx, OverviewCountCap+1)
	if err != nil {
		return Overview{}, err
	}
	o.Events = EventBacklog{Unprocessed: min(backlog.Events, OverviewCountCap), More: backlog.Events > OverviewCountCap, Oldest: backlog.Oldest}
	if backlog.Oldest != nil {
		o.Events.Lag = max(now.Sub(*backlog.Oldest), 0)
	}
	timers, err := e.store.CountPendingTimers(ctx, store.CountTimersParams{DueBy: now, Limit: OverviewCountCap + 1})
	if err != nil {
		return Overview{}, err
	}
	o.Timers = TimerCounts{
		Due: min(timers.Due, OverviewCountCap), Pending: min(timers.Pending, OverviewCountCap),
		More: timers.Pending > OverviewCountCap,
	}
	if o.Nodes, err = e.Nodes(ctx); err != nil {
		return Overview{}, err
	}
	if o.Database.Version, err = e.serverVersion(ctx); err != nil {
		return Overview{}, err
	}
	return o, nil
}

// serverVersion is the database server's version, read once.
func (e *Engine) serverVersion(ctx context.Context) (string, error) {
	if v := e.dbVersion.Load(); v != nil {
		return *v, nil
	}
	v, err := e.store.ServerVersion(ctx)
	if err != nil {
		return "", err
	}
	e.dbVersion.Store(&v)
	return v, nil
}

// definitionCounts are the instance counts per deployment and process.
func (e *Engine) definitionCounts(ctx context.Context) ([]DefinitionCount, error) {
	groups, err := e.store.CountProcessInstanceGroups(ctx)
	if err != nil {
		return nil, err
	}
	var out []DefinitionCount
	for _, g := range groups {
		if len(out) == 0 || out[len(out)-1].DefinitionID != g.DefinitionID || out[len(out)-1].Process != g.ProcessDefID {
			dc := DefinitionCount{DefinitionID: g.DefinitionID, Process: g.ProcessDefID, States: map[wftype.ProcessState]int64{}}
			if dep, err := e.definition(ctx, e.store, g.DefinitionID); err == nil {
				dc.Package, dc.Version = dep.def.PackageID, dep.def.Version
				if proc := dep.pkg.Process(g.ProcessDefID); proc != nil {
					dc.ProcessName = proc.Name
				}
			}
			out = append(out, dc)
		}
		dc := &out[len(out)-1]
		dc.States[wftype.ProcessState(g.State)] += g.N
		dc.Total += g.N
	}
	slices.SortFunc(out, func(a, b DefinitionCount) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), cmp.Compare(a.Version, b.Version),
			strings.Compare(a.Process, b.Process), cmp.Compare(a.DefinitionID, b.DefinitionID))
	})
	return out, nil
}

// minutes are the 60 minutes up to now's, oldest first.
func (e *Engine) minutes(ctx context.Context, now time.Time) ([]MinuteCount, error) {
	last := now.Truncate(time.Minute)
	first := last.Add(-59 * time.Minute)
	counts, err := e.store.CountProcessInstancesPerMinute(ctx, store.CountPerMinuteParams{From: first, To: last.Add(time.Minute)})
	if err != nil {
		return nil, err
	}
	out := make([]MinuteCount, 60)
	for i := range out {
		out[i].Minute = first.Add(time.Duration(i) * time.Minute)
	}
	for _, c := range counts {
		i := int(c.Minute.Sub(first) / time.Minute)
		if i < 0 || i >= len(out) {
			continue
		}
		out[i].Started += c.Started
		out[i].Completed += c.Ended[string(wftype.ProcessCompleted)]
		out[i].Terminated += c.Ended[string(wftype.ProcessTerminated)]
		out[i].Locked += c.Ended[string(wftype.ProcessLocking)]
	}
	return out, nil
}

// Node is an engine process registered on the database. Each renews its
// lease every third of Config.NodeLease; one whose lease ran out is
// dead, and the others take its work over when they next renew theirs
// (package recovery).
type Node struct {
	// ID is the node's Config.NodeID; Run identifies its current run
	// (the owner its event claims carry), Epoch counts its runs.
	ID    string `json:"id"`
	Run   string `json:"run"`
	Epoch int64  `json:"epoch"`
	// Host and PID are the process's.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// StartedAt is when this run registered, HeartbeatAt when it last
	// renewed its lease, LeaseUntil when the lease runs out. The times
	// are the clock of the node that wrote them.
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
	LeaseUntil  time.Time `json:"leaseUntil"`
	// Alive says the lease has not run out by this engine's clock.
	Alive bool `json:"alive"`
	// Self says the node is this engine.
	Self bool `json:"self"`
}

// Nodes lists the engine nodes registered on the database, in ID order.
// An engine over a private in-memory SQLite database registers none:
// no other process can reach that database.
func (e *Engine) Nodes(ctx context.Context) ([]Node, error) {
	rows, err := e.store.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	now := e.now()
	out := make([]Node, len(rows))
	for i, r := range rows {
		out[i] = Node{
			ID: r.ID, Run: r.Owner, Epoch: r.Epoch, Host: r.Host, PID: r.PID,
			StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt, LeaseUntil: r.LeaseUntil,
			Alive: r.LeaseUntil.After(now), Self: r.Owner == e.owner,
		}
	}
	return out, nil
}

// countFoldInterval is how often a started engine folds the changes of
// the instance counts into their totals (store.Tx.FoldInstanceCounts),
// and countFoldLimit how many it folds in one transaction.
const (
	countFoldInterval = time.Second
	countFoldLimit    = 10_000
)

// foldCounts folds the instance counts' changes until none is left (or
// ten transactions went by: the next tick goes on).
func (e *Engine) foldCounts(ctx context.Context) {
	for range 10 {
		n, err := e.store.FoldInstanceCounts(ctx, countFoldLimit)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("folding the instance counts failed; it runs again later", "err", err)
			}
			return
		}
		if n < countFoldLimit {
			return
		}
	}
}
