package main

// override gives a process of the corpus initial data other than its
// file's, or plays the vendor classes its loop depends on, where the file
// as it is would make "run --workitems auto" loop forever: a person
// working the items would change the data, auto completion does not; a
// Bonita hook class (Java) would change it, goxpdl cannot run Java.
type override struct {
	// File is the path inside the corpus, Process the WorkflowProcess id.
	File, Process string
	// Sets are the --set NAME=VALUE arguments.
	Sets []string
	// Hooks are the --hook CLASS=SCRIPT arguments.
	Hooks []string
	// DeadBranch is the --dead-branch argument ("" for the default, lock).
	DeadBranch string
	// Reason is shown in the report.
	Reason string
}

// args returns the override's arguments of goxpdl run; none for nil.
func (o *override) args() []string {
	if o == nil {
		return nil
	}
	var args []string
	for _, s := range o.Sets {
		args = append(args, "--set", s)
	}
	for _, h := range o.Hooks {
		args = append(args, "--hook", h)
	}
	if o.DeadBranch != "" {
		args = append(args, "--dead-branch", o.DeadBranch)
	}
	return args
}

// display returns the override's arguments as the report shows them,
// each flag with its value; none for nil.
func (o *override) display() []string {
	args := o.args()
	out := make([]string, 0, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		out = append(out, args[i]+" "+args[i+1])
	}
	return out
}

// Bonita's test hooks, played in JavaScript (engine/cycles_test.go plays
// the same in Go): the variable updates with which their tests leave a
// cycle.
var (
	bonitaIncrement = []string{"org.ow2.bonita.async.IncrementHook=counter = counter + 1", "org.ow2.bonita.async.NoOpHook="}
	bonitaTerminate = []string{
		`org.ow2.bonita.integration.cycle.HookBeforeTerminateUpdateVariable=cont = "deux"`,
		`org.ow2.bonita.integration.cycle.HookBeforeTerminateUpdateVariable2=cont2 = "deux"`,
	}
)

// overrides is the corpus run's whole table. An entry that names no
// process of the corpus is an error, so the table cannot go stale.
var overrides = []override{
	{
		File: "xpdl1/jawe-workflow_patterns.xpdl", Process: "WfSP2_Implicit_Termination", DeadBranch: "end",
		Reason: `JaWE's sample of implicit termination relies on Shark's silent end of a branch whose conditions all fail (B's, with whereToGo "B"); by default goxpdl locks such a process (paper 2.1)`,
	},
	{
		File: "xpdl2/jawe-workflow_patterns.xpdl", Process: "WfSP2_Implicit_Termination", DeadBranch: "end",
		Reason: `as in xpdl1: the sample relies on Shark's silent end of a lost branch`,
	},
	{
		File: "xpdl1/bonita-entryXorCycle.xpdl", Process: "entryXorCycle", Sets: []string{"cont=deux"},
		Reason: `a2's only transition needs cont other than its initial "un"; Bonita's test sets it while the process runs`,
	},
	{
		File: "xpdl1/bonita-testVariablesWithCycle.xpdl", Process: "testVariablesWithCycle", Sets: []string{"cont=deux"},
		Reason: `as entryXorCycle: a2's only transition needs cont other than "un"`,
	},
	{
		File: "xpdl1/bonita-routes_and_joinXOR_proed.xpdl", Process: "routes_and_join_proed", DeadBranch: "end",
		Reason: `a's way on needs name "marc" and b's needs another name: Bonita's test changes it between the two, and a fixed value loses one branch; Bonita, like Shark, ends a lost branch silently`,
	},
	{
		File: "xpdl1/bonita-MultiInstantiation.xpdl", Process: "multiInstantiation", Sets: []string{"decisionAccepted=yes"},
		Reason: `CheckDecision routes on "yes" or "no", which the Java hook CheckDecision sets; the initial "nobody" takes neither`,
	},
	{
		File: "xpdl1/bonita-transitionConditionMultiInstantiation.xpdl", Process: "transitionCondition", Sets: []string{"conditionVar=true"},
		Reason: `the join's only way on needs conditionVar "true", which Bonita's test sets; the initial "empty" does not`,
	},
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
	{
		File: "xpdl1/bonita-subflowMultiInstantiation-mainCondPass.xpdl", Process: "mainCondPass",
		Hooks:  []string{`org.ow2.bonita.activity.instantiation.CheckExecutionHook=conditionVar2 = "true"`},
		Reason: `a3's only way on needs conditionVar2 "true", which the hook class CheckExecutionHook sets when at least two instances of the multi-instantiated subflow activity a2 passed; goxpdl runs a2 once (no MultiInstantiator), so the hook's verdict is played in JavaScript`,
	},
	{
		File: "xpdl1/bonita-simpleCycle.xpdl", Process: "simpleCycle", Hooks: bonitaTerminate[:1],
		Reason: "Bonita's test leaves the cycle when its hook class HookBeforeTerminateUpdateVariable sets cont; played in JavaScript",
	},
	{
		File: "xpdl1/bonita-nestedCycle.xpdl", Process: "nestedCycle", Hooks: bonitaTerminate,
		Reason: "both cycles end when the hook classes HookBeforeTerminateUpdateVariable(2) set cont and cont2; played in JavaScript",
	},
	{
		File: "xpdl1/bonita-arbitraryCycle.xpdl", Process: "arbitraryCycle", Hooks: bonitaTerminate,
		Reason: "the cycles end when the hook classes HookBeforeTerminateUpdateVariable(2) set cont and cont2; played in JavaScript",
	},
	{
		File: "xpdl1/bonita-asyncCycle.xpdl", Process: "asyncCycle", Hooks: bonitaIncrement,
		Reason: "the cycle counts its rounds with the hook class IncrementHook; played in JavaScript",
	},
	{
		File: "xpdl1/bonita-asyncSplitCycleJoinAnd.xpdl", Process: "asyncSplitCycle", Hooks: bonitaIncrement,
		Reason: "the cycle counts its rounds with the hook class IncrementHook; played in JavaScript",
	},
	{
		File: "xpdl1/bonita-asyncJoinXorCycle.xpdl", Process: "asyncJoinXorCycle", Hooks: bonitaIncrement,
		Reason: "the cycle counts its rounds with the hook class IncrementHook; played in JavaScript (the run still needs C marked Reentrant=\"false\", Bonita's XOR-join semantics, which a flag cannot add: engine/cycles_test.go runs it so)",
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
