package xpdl

// ValidateOpts are the options for Validate.
type ValidateOpts struct {
	// Deployed are other packages deployed alongside this one: SubFlow
	// references may name their processes, as they may in the engine once
	// all are deployed.
	Deployed []*Package
}

// Validate checks the meaning of a package that Read or Load returned and
// reports every problem at once, errors and warnings, in a stable order.
func Validate(pkg *Package, opts *ValidateOpts) Problems {
	return append(Problems(nil), pkg.readProblems...)
}
