package resource

import (
	"context"
	"errors"
)

// ParticipantKind is the kind of an XPDL participant: its ParticipantType.
type ParticipantKind string

// The participant kinds, spelled as in XPDL.
const (
	// KindHuman is one person; the participant id is the user id unless
	// the directory maps it.
	KindHuman ParticipantKind = "HUMAN"
	// KindRole is everyone who holds a role.
	KindRole ParticipantKind = "ROLE"
	// KindOrgUnit is everyone in an organisational unit or one of its
	// sub-units.
	KindOrgUnit ParticipantKind = "ORGANIZATIONAL_UNIT"
	// KindResource is a resource; directories treat it like a role.
	KindResource ParticipantKind = "RESOURCE"
	// KindResourceSet is a set of resources; directories treat it like a
	// role.
	KindResourceSet ParticipantKind = "RESOURCE_SET"
	// KindSystem is the system itself: automatic work that no person does.
	// It resolves to nobody.
	KindSystem ParticipantKind = "SYSTEM"
)

// ParticipantKinds lists every participant kind.
var ParticipantKinds = []ParticipantKind{
	KindHuman, KindRole, KindOrgUnit, KindResource, KindResourceSet, KindSystem,
}

// Valid reports whether k is one of ParticipantKinds.
func (k ParticipantKind) Valid() bool {
	switch k {
	case KindHuman, KindRole, KindOrgUnit, KindResource, KindResourceSet, KindSystem:
		return true
	}
	return false
}

// Participant is a performer as a process definition names it.
type Participant struct {
	// ID is the participant's id in the process definition.
	ID string
	// Name is its display name; directories do not use it to resolve.
	Name string
	// Kind is its XPDL participant type.
	Kind ParticipantKind
}

// Memberships are the groups a user belongs to.
type Memberships struct {
	// Roles are the user's roles, sorted.
	Roles []string
	// Units are the units the user belongs to, directly or through a
	// sub-unit (a member of "sales-east" whose parent is "sales" belongs to
	// both), sorted.
	Units []string
}

// Directory is the host's organisation model as the engine sees it
// (interface I3). The host implements it; Anyone and OrgDirectory are
// ready-made implementations. Methods must be safe for concurrent use.
type Directory interface {
	// Resolve returns the user ids p stands for, sorted and without
	// duplicates: the user for HUMAN, the role's members for ROLE,
	// RESOURCE and RESOURCE_SET, the members of the unit and its sub-units
	// for ORGANIZATIONAL_UNIT, and nil for SYSTEM. A participant the
	// directory does not know is an error wrapping ErrUnknownParticipant.
	// An empty result with a nil error means that nobody is known to stand
	// for p; the engine then offers work to the participant itself.
	Resolve(ctx context.Context, p Participant) ([]string, error)
	// Memberships returns the roles user has and the units user belongs
	// to, parent units included. An unknown user is an error wrapping
	// ErrUnknownUser.
	Memberships(ctx context.Context, user string) (Memberships, error)
	// IsMember reports whether user may act as p: claim, complete or be
	// assigned the work p is offered. Errors are as for Resolve and
	// Memberships.
	IsMember(ctx context.Context, user string, p Participant) (bool, error)
}

// Errors a Directory returns, wrapped with the participant or user.
var (
	// ErrUnknownParticipant: the directory cannot resolve the participant
	// (no such user, role or unit, or an invalid kind).
	ErrUnknownParticipant = errors.New("unknown participant")
	// ErrUnknownUser: the directory has no such user.
	ErrUnknownUser = errors.New("unknown user")
)

// Anyone is the permissive default Directory, for running without an
// organisation: Resolve returns nil for every participant, so the engine
// offers each work item to the participant itself; Memberships returns no
// roles or units for any user; and IsMember is always true, so any user
// may claim and complete any work item. Use it for development, demos and
// single-user deployments, never where who does the work matters.
type Anyone struct{}

var (
	_ Directory = Anyone{}
	_ Directory = (*OrgDirectory)(nil)
)

// Resolve returns nil: nobody in particular stands for p.
func (Anyone) Resolve(context.Context, Participant) ([]string, error) { return nil, nil }

// Memberships returns no roles and no units; every user is known.
func (Anyone) Memberships(context.Context, string) (Memberships, error) {
	return Memberships{}, nil
}

// IsMember returns true: anyone may act as any participant.
func (Anyone) IsMember(context.Context, string, Participant) (bool, error) { return true, nil }

// Mapper is implemented by a Directory that can name what a participant
// stands for as a whole: the user, role or unit of the organisation it
// maps to (a Participant of kind HUMAN, ROLE or ORGANIZATIONAL_UNIT with
// the organisation's id). The engine then offers work to the role or unit
// itself, and its members find it through their Memberships, instead of
// offering it to each member. Without a Mapper the engine uses the
// participant's own id and kind.
type Mapper interface {
	// Map returns what p stands for; ErrUnknownParticipant when nothing.
	Map(ctx context.Context, p Participant) (Participant, error)
}

var _ Mapper = (*OrgDirectory)(nil)
