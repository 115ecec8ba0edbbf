package resource

import (
	"context"
	"fmt"
	"slices"
)

// OrgDirectory is a Directory read from an organisation file (see the
// package documentation for the format). It is immutable once loaded and
// safe for concurrent use; the slices it returns are the caller's own.
type OrgDirectory struct {
	users    map[string]orgUser
	roles    map[string][]string // role id -> members, sorted
	units    map[string]orgUnit
	mappings map[string]target // participant id -> target
}

type orgUser struct {
	roles []string // sorted
	units []string // the user's units and their ancestors, sorted
}

type orgUnit struct {
	manager string
	members []string // members of the unit and its sub-units, sorted
}

// targetKind is what a participant resolves to in an OrgDirectory.
type targetKind string

const (
	targetUser targetKind = "user"
	targetRole targetKind = "role"
	targetUnit targetKind = "unit"
)

type target struct {
	kind targetKind
	id   string
}

// Resolve returns the user ids p stands for (see Directory.Resolve).
func (d *OrgDirectory) Resolve(_ context.Context, p Participant) ([]string, error) {
	t, err := d.target(p)
	if err != nil || p.Kind == KindSystem {
		return nil, err
	}
	switch t.kind {
	case targetUser:
		return []string{t.id}, nil
	case targetRole:
		return slices.Clone(d.roles[t.id]), nil
	default:
		return slices.Clone(d.units[t.id].members), nil
	}
}

// Memberships returns user's roles and units, ancestors of the units
// included (see Directory.Memberships).
func (d *OrgDirectory) Memberships(_ context.Context, user string) (Memberships, error) {
	u, ok := d.users[user]
	if !ok {
		return Memberships{}, fmt.Errorf("memberships of %q: %w", user, ErrUnknownUser)
	}
	return Memberships{Roles: slices.Clone(u.roles), Units: slices.Clone(u.units)}, nil
}

// IsMember reports whether user may act as p: p resolves to user, to a role
// user holds, or to a unit user belongs to directly or through a sub-unit.
// Nobody is a member of a SYSTEM participant.
func (d *OrgDirectory) IsMember(_ context.Context, user string, p Participant) (bool, error) {
	t, err := d.target(p)
	if err != nil {
		return false, err
	}
	u, ok := d.users[user]
	if !ok {
		return false, fmt.Errorf("is %q a member of participant %q: %w", user, p.ID, ErrUnknownUser)
	}
	if p.Kind == KindSystem {
		return false, nil
	}
	switch t.kind {
	case targetUser:
		return t.id == user, nil
	case targetRole:
		_, found := slices.BinarySearch(u.roles, t.id)
		return found, nil
	default:
		_, found := slices.BinarySearch(u.units, t.id)
		return found, nil
	}
}

// Manager returns the manager of unit as the organisation file names it;
// ok is false when the unit is unknown or has no manager.
func (d *OrgDirectory) Manager(unit string) (user string, ok bool) {
	m := d.units[unit].manager
	return m, m != ""
}

// target finds what p stands for: its mapping, or else its id read by its
// kind. The target exists. SYSTEM participants get a zero target.
func (d *OrgDirectory) target(p Participant) (target, error) {
	if !p.Kind.Valid() {
		return target{}, fmt.Errorf("participant %q: invalid kind %q: %w", p.ID, p.Kind, ErrUnknownParticipant)
	}
	if p.Kind == KindSystem {
		return target{}, nil
	}
	t, mapped := d.mappings[p.ID]
	if !mapped {
		switch p.Kind {
		case KindHuman:
			t = target{targetUser, p.ID}
		case KindOrgUnit:
			t = target{targetUnit, p.ID}
		default: // ROLE, RESOURCE, RESOURCE_SET
			t = target{targetRole, p.ID}
		}
	}
	var exists bool
	switch t.kind {
	case targetUser:
		_, exists = d.users[t.id]
	case targetRole:
		_, exists = d.roles[t.id]
	case targetUnit:
		_, exists = d.units[t.id]
	}
	if !exists {
		how := "its id"
		if mapped {
			how = "its mapping"
		}
		return target{}, fmt.Errorf("participant %q (%s): %s names %s %q, which the organisation lacks: %w",
			p.ID, p.Kind, how, t.kind, t.id, ErrUnknownParticipant)
	}
	return t, nil
}

// newOrgDirectory builds the directory from a document that passed
// validation: every reference resolves and the unit parents form no cycle.
func newOrgDirectory(doc *orgDoc) *OrgDirectory {
	d := &OrgDirectory{
		users:    make(map[string]orgUser, len(doc.Users)),
		roles:    make(map[string][]string, len(doc.Roles)),
		units:    make(map[string]orgUnit, len(doc.Units)),
		mappings: make(map[string]target, len(doc.Participants)),
	}
	parent := make(map[string]string, len(doc.Units))
	for _, r := range doc.Roles {
		d.roles[r.ID] = nil
	}
	for _, u := range doc.Units {
		parent[u.ID] = u.Parent
		d.units[u.ID] = orgUnit{manager: u.Manager}
	}
	unitMembers := map[string][]string{}
	for _, u := range doc.Users {
		roles := sortedSet(u.Roles)
		var units []string
		for _, unit := range u.Units {
			for ; unit != ""; unit = parent[unit] {
				units = append(units, unit)
			}
		}
		units = sortedSet(units)
		d.users[u.ID] = orgUser{roles: roles, units: units}
		for _, r := range roles {
			d.roles[r] = append(d.roles[r], u.ID)
		}
		for _, unit := range units {
			unitMembers[unit] = append(unitMembers[unit], u.ID)
		}
	}
	for r, members := range d.roles {
		d.roles[r] = sortedSet(members)
	}
	for id, members := range unitMembers {
		u := d.units[id]
		u.members = sortedSet(members)
		d.units[id] = u
	}
	for id, m := range doc.Participants {
		switch {
		case m.Role != "":
			d.mappings[id] = target{targetRole, m.Role}
		case m.Unit != "":
			d.mappings[id] = target{targetUnit, m.Unit}
		default:
			d.mappings[id] = target{targetUser, m.User}
		}
	}
	return d
}

// sortedSet returns s sorted and without duplicates, in a new slice; nil
// when s is empty.
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Map names what p stands for in the organisation: a HUMAN participant
// for a user, a ROLE for a role, an ORGANIZATIONAL_UNIT for a unit (see
// Mapper). A SYSTEM participant maps to itself.
func (d *OrgDirectory) Map(_ context.Context, p Participant) (Participant, error) {
	t, err := d.target(p)
	if err != nil {
		return Participant{}, err
	}
	switch {
	case p.Kind == KindSystem:
		return p, nil
	case t.kind == targetUser:
		return Participant{ID: t.id, Kind: KindHuman}, nil
	case t.kind == targetRole:
		return Participant{ID: t.id, Kind: KindRole}, nil
	default:
		return Participant{ID: t.id, Kind: KindOrgUnit}, nil
	}
}
