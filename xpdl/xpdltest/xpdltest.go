// Package xpdltest builds small XPDL documents for tests from a compact
// notation, so that a test of control flow reads like the graph it
// exercises.
package xpdltest

import (
	"fmt"
	"strings"
)

// Graph returns an XPDL 1.0 package "pkg" holding one WorkflowProcess "p"
// with a package data field x (INTEGER, initial value 0) and s (STRING).
//
// acts is a space-separated list of activities, each "ID" or
// "ID:JOIN/SPLIT" with JOIN and SPLIT one of and, xor, or (either may be
// empty: "B:and", "A:/xor"). Every activity is a Route.
//
// Each transition is "FROM>TO", optionally followed by "?EXPR" (a
// JavaScript condition), "!otherwise", "!exception=NAME" or
// "!defaultexception". Transition ids are t1, t2, ... in order.
func Graph(acts string, transitions ...string) string {
	var a, t strings.Builder
	for _, spec := range strings.Fields(acts) {
		id, gw, _ := strings.Cut(spec, ":")
		join, split, _ := strings.Cut(gw, "/")
		a.WriteString(Activity(id, "<Route/>", join, split))
	}
	for i, spec := range transitions {
		t.WriteString(Transition(fmt.Sprintf("t%d", i+1), spec))
	}
	return Package(Process("p", "", a.String(), t.String()))
}

// Activity returns an Activity element with the given implementation XML
// (e.g. "<Route/>", "<Implementation><No/></Implementation>") and
// optional join and split types (and, xor, or; "" for none).
func Activity(id, impl, join, split string) string {
	var restr string
	if join != "" || split != "" {
		restr = "<TransitionRestrictions><TransitionRestriction>"
		if join != "" {
			restr += `<Join Type="` + strings.ToUpper(join) + `"/>`
		}
		if split != "" {
			restr += `<Split Type="` + strings.ToUpper(split) + `"/>`
		}
		restr += "</TransitionRestriction></TransitionRestrictions>"
	}
	return `<Activity Id="` + id + `">` + impl + restr + `</Activity>`
}

// Transition returns a Transition element from the notation of Graph.
func Transition(id, spec string) string {
	var kind string
	if i := strings.LastIndex(spec, "!"); i >= 0 {
		if k := spec[i+1:]; k == "otherwise" || k == "defaultexception" || strings.HasPrefix(k, "exception=") {
			spec, kind = spec[:i], k
		}
	}
	spec, cond, _ := strings.Cut(spec, "?")
	from, to, _ := strings.Cut(spec, ">")
	var c string
	switch {
	case kind == "otherwise":
		c = `<Condition Type="OTHERWISE"/>`
	case kind == "defaultexception":
		c = `<Condition Type="DEFAULTEXCEPTION"/>`
	case strings.HasPrefix(kind, "exception="):
		c = `<Condition Type="EXCEPTION">` + strings.TrimPrefix(kind, "exception=") + `</Condition>`
	case cond != "":
		c = `<Condition Type="CONDITION">` + escape(cond) + `</Condition>`
	}
	return `<Transition Id="` + id + `" From="` + strings.TrimSpace(from) + `" To="` + strings.TrimSpace(to) + `">` + c + `</Transition>`
}

// Process returns a WorkflowProcess element; extra is inserted before the
// activities (DataFields, FormalParameters, ActivitySets, ...).
func Process(id, extra, activities, transitions string) string {
	return `<WorkflowProcess Id="` + id + `">` + extra + `<Activities>` + activities + `</Activities><Transitions>` +
		transitions + `</Transitions></WorkflowProcess>`
}

// Package wraps processes in an XPDL 1.0 package "pkg" with a JavaScript
// script declaration, a participant "clerk" (ROLE) and data fields x
// (INTEGER, 0) and s (STRING, "").
func Package(processes string) string {
	return PackageWith("", processes)
}

// PackageWith is Package with extra package-level XML (Applications,
// more Participants) inserted after the participants.
func PackageWith(extra, processes string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="pkg" Name="test">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-21</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  ` + extra + `
  <DataFields>
    <DataField Id="x"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
    <DataField Id="s"><DataType><BasicType Type="STRING"/></DataType><InitialValue></InitialValue></DataField>
  </DataFields>
  <WorkflowProcesses>` + processes + `</WorkflowProcesses>
</Package>`
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Sized returns a valid package in which the count that the definition
// limit named limit (a field of xpdl.Limits, e.g. "Activities") bounds is
// exactly n, and every other count is small: a package at that limit for
// n equal to it, just over it for one more. The package is "pkg", its
// process "p" (or "p1"… for Processes; "main" and "sub" for SubFlows).
// n must be at least 2 for DataFields, 14 for
// ExpressionBytes, and 1 for the others; Sized panics on an unknown limit.
func Sized(limit string, n int) string {
	route := func(id string) string { return Activity(id, "<Route/>", "", "") }
	var b strings.Builder
	each := func(format string) string {
		b.Reset()
		for i := range n {
			fmt.Fprintf(&b, format, i+1)
		}
		return b.String()
	}
	switch limit {
	case "Processes":
		b.Reset()
		for i := range n {
			b.WriteString(Process(fmt.Sprintf("p%d", i+1), "", route("a"), ""))
		}
		return Package(b.String())
	case "Activities":
		return Package(Process("p", "", each(`<Activity Id="a%d"><Route/></Activity>`), ""))
	case "Transitions":
		return Package(Process("p", "", route("a")+route("b"), each(`<Transition Id="t%d" From="a" To="b"/>`)))
	case "ActivitySets":
		return Package(Process("p", "<ActivitySets>"+each(`<ActivitySet Id="S%d"><Activities><Activity Id="s%[1]d"><Route/></Activity></Activities></ActivitySet>`)+"</ActivitySets>",
			Activity("a", `<BlockActivity BlockId="S1"/>`, "", ""), ""))
	case "Nesting":
		// The process's block runs S1, whose block runs S2, … Sn, which
		// holds a Route only: n levels.
		var sets strings.Builder
		for i := 1; i <= n; i++ {
			inner := "<Route/>"
			if i < n {
				inner = fmt.Sprintf(`<BlockActivity BlockId="S%d"/>`, i+1)
			}
			fmt.Fprintf(&sets, `<ActivitySet Id="S%d"><Activities><Activity Id="s%[1]d">%s</Activity></Activities></ActivitySet>`, i, inner)
		}
		return Package(Process("p", "<ActivitySets>"+sets.String()+"</ActivitySets>", Activity("a", `<BlockActivity BlockId="S1"/>`, "", ""), ""))
	case "DataFields":
		// The package declares two (x and s); the process the rest.
		n -= 2
		return Package(Process("p", "<DataFields>"+each(`<DataField Id="f%d"><DataType><BasicType Type="STRING"/></DataType></DataField>`)+"</DataFields>", route("a"), ""))
	case "FormalParameters":
		return Package(Process("p", "<FormalParameters>"+each(`<FormalParameter Id="f%d" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>`)+"</FormalParameters>", route("a"), ""))
	case "Participants":
		// The package declares one (clerk); the process the rest.
		n--
		return Package(Process("p", "<Participants>"+each(`<Participant Id="r%d"><ParticipantType Type="ROLE"/></Participant>`)+"</Participants>", route("a"), ""))
	case "Applications":
		return PackageWith("<Applications>"+each(`<Application Id="app%d"/>`)+"</Applications>", Process("p", "", route("a"), ""))
	case "SubFlows":
		return Package(Process("main", "", each(`<Activity Id="call%d"><Implementation><SubFlow Id="sub"/></Implementation></Activity>`), "") +
			Process("sub", "", route("a"), ""))
	case "Deadlines":
		return Package(Process("p", "", `<Activity Id="a"><Implementation><No/></Implementation><Performer>clerk</Performer>`+
			each(`<Deadline Execution="ASYNCHR"><DeadlineCondition>P%dD</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline>`)+
			`</Activity>`+route("b"), Transition("t1", "a>b")+Transition("t2", "a>b!exception=late")))
	case "ExpressionBytes":
		cond := `"` + strings.Repeat("a", n-13) + `".length > 0`
		return Package(Process("p", "", route("a")+route("b"), Transition("t1", "a>b?"+cond)))
	case "ExtendedAttributeBytes":
		return Package(Process("p", "", `<Activity Id="a"><Route/><ExtendedAttributes><ExtendedAttribute Name="k" Value="`+
			strings.Repeat("v", n-1)+`"/></ExtendedAttributes></Activity>`, ""))
	case "IDBytes":
		return Package(Process("p", "", route(strings.Repeat("a", n)), ""))
	}
	panic("xpdltest: no definition limit " + limit)
}
