package xpdl_test

import (
	"errors"
	"fmt"
	"log"
	"path/filepath"

	"github.com/goxpdl/goxpdl/xpdl"
)

// ExampleLoad reads a file with the packages it references and validates
// it: the file has one warning and no error. README.md shows the marked
// part.
func ExampleLoad() {
	file := filepath.Join("testdata", "orders.xpdl")
	// begin docblock README.md
	// Load reads the file and the ExternalPackages it references.
	pkg, err := xpdl.Load(file, nil)
	var syntaxErr *xpdl.SyntaxError
	switch {
	case errors.As(err, &syntaxErr):
		log.Fatal(syntaxErr.Problem()) // not XPDL at all: FILE:LINE:COL: message
	case err != nil:
		log.Fatal(err) // the file could not be read
	}

	// Validate reports every problem, errors and warnings, in a stable order.
	// ValidateOpts.Deployed may list packages deployed alongside, whose
	// processes SubFlows may then use; nil options validate the package alone.
	problems := xpdl.Validate(pkg, nil)
	for _, p := range problems {
		fmt.Println(p) // FILE:LINE:COL: [warning: ]message
	}
	if err := problems.Err(); err != nil { // a *xpdl.ValidationError when any problem is an error
		log.Fatal(err)
	}
	// end docblock
	fmt.Println("valid:", pkg.ID)
	// Output:
	// testdata/orders.xpdl:10:11: warning: activity "approve": deadline has no DeadlineCondition or DeadlineDuration, or an empty one; it is ignored
	// valid: orders
}
