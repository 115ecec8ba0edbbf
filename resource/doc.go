// Package resource is goxpdl's interface I3: how the engine learns who may
// do the work. An XPDL process names its performers as participants
// (HUMAN, ROLE, ORGANIZATIONAL_UNIT, RESOURCE, RESOURCE_SET, SYSTEM); the
// people behind those names live in the host's organisation model, which
// the engine does not own. The host tells the engine about them by
// implementing Directory.
//
// # How the engine uses a Directory
//
// When an activity needs a person, the engine calls Resolve with the
// activity's performer and offers the work item to the user ids it returns
// (and, through the worklist, to the holders of the participant's role or
// unit). When Resolve returns no user ids (Anyone, or a role nobody holds)
// the item is offered to the participant itself and waits there. Before a
// user claims, completes or is reassigned a work item, the engine asks
// IsMember whether that user may act as the item's participant, and
// refuses the action when the answer is no. Memberships gives a user's
// roles and units, which is what a worklist query needs to find the items
// offered to any of them.
//
// A Directory may be called from many goroutines at once and should answer
// quickly: it is on the path of every work item. Implementations backed by
// a remote service should cache.
//
// # Implementations
//
// Anyone is the permissive default for running without an organisation:
// it resolves nobody and lets everyone do everything. OrgDirectory reads a
// small organisation file (YAML or JSON) of users, roles, organisational
// units and participant mappings; the command-line program and the demos
// use it, and it suits small deployments and tests:
//
//	users:
//	  - id: alice
//	    name: Alice Smith
//	    roles: [clerk, manager]
//	    units: [sales-east]
//	roles:
//	  - id: clerk
//	    name: Clerk
//	  - id: manager
//	units:
//	  - id: sales
//	  - id: sales-east
//	    parent: sales
//	    manager: alice          # optional, a user id
//	participants:               # optional: XPDL participant id -> target
//	  Approver: {role: manager}
//	  SalesDept: {unit: sales}
//	  Boss: {user: alice}
//
// Load it with LoadOrgFile (the format follows the extension) or ParseOrg.
// A participant listed under participants resolves to its target whatever
// its kind; any other participant resolves by its kind, with its id taken
// as the id of a user (HUMAN), a role (ROLE, RESOURCE, RESOURCE_SET) or a
// unit (ORGANIZATIONAL_UNIT). A unit's members include the members of its
// sub-units. SYSTEM participants are the engine's own automatic work and
// resolve to nobody, in every Directory.
//
// An XPDL participant converts directly: the values of ParticipantKind are
// the XPDL ParticipantType names, so
//
//	resource.Participant{ID: p.ID, Name: p.Name, Kind: resource.ParticipantKind(p.Type)}
//
// builds one from an *xpdl.Participant.
package resource
