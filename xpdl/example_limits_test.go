package xpdl_test

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// ExampleCheckLimits checks a package of three activities against limits
// that allow two: the error names the limit, its value and the count, at
// the process. docs/security.md shows the marked part.
func ExampleCheckLimits() {
	src := xpdltest.Sized("Activities", 3)
	// begin docblock docs/security.md
	pkg, err := xpdl.Read(strings.NewReader(src), &xpdl.ReadOpts{Name: "three.xpdl"})
	if err != nil {
		log.Fatal(err) // a *xpdl.SyntaxError over an XML limit (ReadOpts)
	}
	limits := xpdl.Limits{Activities: 2} // the other limits keep their defaults
	err = xpdl.CheckLimits(pkg, &limits)
	var over *xpdl.LimitError
	if errors.As(err, &over) { // errors.Is(err, xpdl.ErrLimit) and xpdl.ErrInvalid hold too
		fmt.Println(over.Limit, over.Max, over.Count) // Activities 2 3
		fmt.Println(over.Problem())                   // three.xpdl:11:22: process "p" has 3 activities (its activity sets' included), more than the limit of 2 (Limits.Activities)
	}
	// Validate checks the limits first (ValidateOpts.Limits, nil: the
	// defaults) and reports the one exceeded alone.
	problems := xpdl.Validate(pkg, &xpdl.ValidateOpts{Limits: &limits})
	// end docblock
	fmt.Println(problems.Errors()[0].Code)
	// Output:
	// Activities 2 3
	// three.xpdl:11:22: process "p" has 3 activities (its activity sets' included), more than the limit of 2 (Limits.Activities)
	// limit
}
