package resource_test

import (
	"context"
	"fmt"

	"github.com/goxpdl/goxpdl/resource"
)

// Parse a small organisation and ask who may do the work of a ROLE
// participant, as the engine does when it offers a work item.
func ExampleParseOrg() {
	org := []byte(`
users:
  - id: alice
    roles: [clerk]
    units: [sales-east]
  - id: bob
    roles: [clerk, manager]
    units: [sales]
roles:
  - id: clerk
  - id: manager
units:
  - id: sales
  - id: sales-east
    parent: sales
participants:
  Approver: {role: manager}
`)
	dir, err := resource.ParseOrg(org, resource.FormatYAML)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	clerks, _ := dir.Resolve(ctx, resource.Participant{ID: "clerk", Kind: resource.KindRole})
	fmt.Println("clerk:", clerks)
	approvers, _ := dir.Resolve(ctx, resource.Participant{ID: "Approver", Kind: resource.KindRole})
	fmt.Println("Approver:", approvers)
	sales, _ := dir.Resolve(ctx, resource.Participant{ID: "sales", Kind: resource.KindOrgUnit})
	fmt.Println("sales:", sales)
	may, _ := dir.IsMember(ctx, "alice", resource.Participant{ID: "Approver", Kind: resource.KindRole})
	fmt.Println("may alice approve?", may)
	// Output:
	// clerk: [alice bob]
	// Approver: [bob]
	// sales: [alice bob]
	// may alice approve? false
}
