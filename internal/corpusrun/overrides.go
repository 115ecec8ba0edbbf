package main

// override gives a process of the corpus initial data other than its
// file's, where the file's data would make "run --workitems auto" loop
// forever: a person working the items would change the data, auto
// completion does not.
type override struct {
	// File is the path inside the corpus, Process the WorkflowProcess id.
	File, Process string
	// Sets are the --set NAME=VALUE arguments.
	Sets []string
	// Reason is shown in the report.
	Reason string
}

// overrides is the corpus run's whole table. An entry that names no
// process of the corpus is an error, so the table cannot go stale.
var overrides = []override{
	{
		File:    "xpdl1/jawe-workflow_patterns.xpdl",
		Process: "WfSP1_Arbitrary_Cycles",
		Sets:    []string{"whereToGo=E"},
		Reason:  `the file's initial value "B" loops C→B forever; activity C's description asks the person to change whereToGo, and any value but "B" or "C" leads on to E`,
	},
	{
		// The XPDL 2.1 edition of the same pattern, with the splits as
		// route activities.
		File:    "xpdl2/jawe-workflow_patterns.xpdl",
		Process: "WfSP1_Arbitrary_Cycles",
		Sets:    []string{"whereToGo=E"},
		Reason:  `as in xpdl1: the initial value "B" loops C→B forever; a person working C would change whereToGo`,
	},
}

// overrideFor returns the override for a process, if there is one.
func overrideFor(file, process string) (override, bool) {
	for _, o := range overrides {
		if o.File == file && o.Process == process {
			return o, true
		}
	}
	return override{}, false
}
