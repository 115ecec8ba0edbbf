package gormstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// How ListWorklist answers a page from the visibility table
// (visibilityModel), whose key is (principal_kind, principal_id,
// neg_priority, work_item_id): the worklist order of one principal.
//
// Each principal is one "arm": a range scan of that key, in key order,
// that tests the filters on the copied columns and stops after Limit
// matches (ORDER BY neg_priority, work_item_id LIMIT n follows the key, so
// neither database sorts). The first Limit items of the union are among
// the first Limit of each arm, so Limit rows per arm are enough. With a
// process filter each (principal, process) pair is an arm over the index
// goxpdl_work_item_visibility_process instead, so the scan reads only
// rows of those processes. One statement unions the arms (UNION drops
// an item seen through several principals), keeps the first Limit in the
// same order, and joins them to their work items by primary key: a
// single statement reads one snapshot, so the items agree with the
// visibility rows that chose them. Sorting the page in Go costs nothing
// and spares the database a second sort.
//
// The filters on state, activity and deadline are tested while scanning,
// so a filter that few items pass makes the scan read further (all of the
// principal's rows at worst); the process filter and MinPriority narrow
// the range itself.

// maxWorklistArms is the most arms one statement unions; SQLite allows at
// most 500 terms in a compound SELECT. More principals than that are read
// in several statements (several snapshots) and merged in Go; a process
// filter that would make more arms is tested while scanning instead.
const maxWorklistArms = 100

// worklistArm is one range scan of the visibility table.
type worklistArm struct {
	principal store.Principal
	// process, when byProcess, narrows the scan to one process through
	// goxpdl_work_item_visibility_process.
	process   string
	byProcess bool
}

// ListWorklist implements store.Tx.
func (s *Store) ListWorklist(ctx context.Context, params store.ListWorklistParams) ([]store.WorkItem, error) {
	principals, err := principalSet("list worklist: principals", params.Principals)
	if err != nil {
		return nil, err
	}
	switch {
	case len(principals) == 0:
		return nil, errors.New("list worklist: no principals")
	case params.Limit < 1 || params.Limit > store.MaxWorklistLimit:
		return nil, fmt.Errorf("list worklist: limit %d, want 1 to %d", params.Limit, store.MaxWorklistLimit)
	}
	if params.After != nil {
		if err := requirePriority("list worklist: after", params.After.Priority); err != nil {
			return nil, err
		}
	}
	if params.MinPriority != nil {
		if err := requirePriority("list worklist: min priority", *params.MinPriority); err != nil {
			return nil, err
		}
	}

	var arms []worklistArm
	processes := slices.Compact(slices.Sorted(slices.Values(params.ProcessDefIDs)))
	byProcess := len(processes) > 0 && len(principals)*len(processes) <= maxWorklistArms
	for _, p := range principals {
		if !byProcess {
			arms = append(arms, worklistArm{principal: p})
			continue
		}
		for _, proc := range processes {
			arms = append(arms, worklistArm{principal: p, process: proc, byProcess: true})
		}
	}

	var ms []workItemModel
	for start := 0; start < len(arms); start += maxWorklistArms {
		sql, args := worklistStatement(s.dialect, arms[start:min(start+maxWorklistArms, len(arms))], params, !byProcess)
		var page []workItemModel
		if err := s.db.WithContext(ctx).Raw(sql, args...).Scan(&page).Error; err != nil {
			return nil, wrap(err, "list worklist of %d principals", len(principals))
		}
		ms = append(ms, page...)
	}
	if len(arms) > maxWorklistArms { // several statements may return an item each
		seen := make(map[int64]bool, len(ms))
		ms = slices.DeleteFunc(ms, func(m workItemModel) bool {
			dup := seen[m.ID]
			seen[m.ID] = true
			return dup
		})
	}
	slices.SortFunc(ms, func(a, b workItemModel) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.ID, b.ID))
	})
	ms = ms[:min(len(ms), params.Limit)]
	out, err := workItemRows(ms)
	if err != nil {
		return nil, fmt.Errorf("list worklist: %w", err)
	}
	return out, nil
}

// worklistStatement is the SQL of one worklist statement over arms in
// dialect, and its arguments. filterProcesses tests params.ProcessDefIDs while scanning (the
// arms are not by process).
func worklistStatement(dialect string, arms []worklistArm, params store.ListWorklistParams, filterProcesses bool) (string, []any) {
	limit := strconv.Itoa(params.Limit)
	var b strings.Builder
	var args []any
	b.WriteString("SELECT w.* FROM (")
	if len(arms) == 1 {
		args = worklistArmSQL(&b, args, dialect, arms[0], params, filterProcesses)
	} else {
		b.WriteString("SELECT neg_priority, work_item_id FROM (")
		for i, arm := range arms {
			if i > 0 {
				b.WriteString(" UNION ")
			}
			b.WriteString("SELECT * FROM (")
			args = worklistArmSQL(&b, args, dialect, arm, params, filterProcesses)
			fmt.Fprintf(&b, ") AS a%d", i)
		}
		b.WriteString(") AS u ORDER BY neg_priority, work_item_id LIMIT " + limit)
	}
	b.WriteString(") AS t JOIN " + tableWorkItems + " AS w ON w.id = t.work_item_id")
	return b.String(), args
}

// worklistArmSQL writes the range scan of one arm to b and returns args
// with its arguments appended.
func worklistArmSQL(b *strings.Builder, args []any, dialect string, arm worklistArm, params store.ListWorklistParams, filterProcesses bool) []any {
	b.WriteString("SELECT neg_priority, work_item_id FROM " + tableVisibility + " WHERE principal_kind = ? AND principal_id = ?")
	args = append(args, string(arm.principal.Kind), arm.principal.ID)
	if arm.byProcess {
		b.WriteString(" AND process_def_id = ?")
		args = append(args, arm.process)
	}
	if c := params.After; c != nil {
		// (neg_priority, work_item_id) > (-c.Priority, c.ID), spelt as
		// each database seeks straight to it rather than reading the
		// cursor's whole priority from its start: SQLite and PostgreSQL
		// take the row value as the range's lower bound, MySQL/MariaDB make two ranges
		// of the OR (an OR makes SQLite sort the principal's items).
		neg := -int64(c.Priority)
		if dialect != store.DialectMySQL {
			b.WriteString(" AND (neg_priority, work_item_id) > (?, ?)")
			args = append(args, neg, c.ID)
		} else {
			b.WriteString(" AND (neg_priority > ? OR (neg_priority = ? AND work_item_id > ?))")
			args = append(args, neg, neg, c.ID)
		}
	}
	if params.MinPriority != nil {
		b.WriteString(" AND neg_priority <= ?")
		args = append(args, -int64(*params.MinPriority))
	}
	if len(params.States) > 0 {
		b.WriteString(" AND state IN ?")
		args = append(args, params.States)
	}
	if filterProcesses && len(params.ProcessDefIDs) > 0 {
		b.WriteString(" AND process_def_id IN ?")
		args = append(args, params.ProcessDefIDs)
	}
	if len(params.ActivityDefIDs) > 0 {
		b.WriteString(" AND activity_def_id IN ?")
		args = append(args, params.ActivityDefIDs)
	}
	if params.DueBefore != nil {
		b.WriteString(" AND due_at < ?")
		args = append(args, dbTime(*params.DueBefore))
	}
	b.WriteString(" ORDER BY neg_priority, work_item_id LIMIT " + strconv.Itoa(params.Limit))
	return args
}

// insertVisibility writes the visibility rows of work item m, copying the
// columns worklist filters test.
func (s *Store) insertVisibility(ctx context.Context, m *workItemModel, principals []store.Principal) error {
	rows := make([]visibilityModel, len(principals))
	for i, p := range principals {
		rows[i] = visibilityModel{
			PrincipalKind: string(p.Kind),
			PrincipalID:   p.ID,
			NegPriority:   -int64(m.Priority),
			WorkItemID:    m.ID,
			ProcessDefID:  m.ProcessDefID,
			ActivityDefID: m.ActivityDefID,
			State:         m.State,
			DueAt:         m.DueAt,
		}
	}
	return createBatch(ctx, s, rows)
}

// principalSet checks that every principal has a kind and an id and
// returns them without duplicates, in their first order.
func principalSet(what string, ps []store.Principal) ([]store.Principal, error) {
	out := make([]store.Principal, 0, len(ps))
	seen := make(map[store.Principal]bool, len(ps))
	for i, p := range ps {
		if p.Kind == "" || p.ID == "" {
			return nil, fmt.Errorf("%s: principal %d (%q, %q) needs a kind and an id", what, i, p.Kind, p.ID)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// requirePriority rejects the one priority the worklist order cannot
// hold: the visibility table keys on -priority, and the negation of the
// smallest int64 overflows.
func requirePriority(what string, p int) error {
	if int64(p) == math.MinInt64 {
		return fmt.Errorf("gormstore: %s: priority %d out of range", what, p)
	}
	return nil
}

// within returns a Store over db, a transaction begun by s.
func (s *Store) within(db *gorm.DB) *Store {
	return &Store{db: db, dialect: s.dialect, readCommitted: s.readCommitted, pipelined: s.pipelined}
}
