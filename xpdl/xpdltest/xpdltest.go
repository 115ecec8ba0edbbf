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
