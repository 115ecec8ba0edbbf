package engine_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// scriptGlobals are the global names a definition's JavaScript sees
// besides its instance's variables: ECMAScript's built-ins as goja has
// them, and the Java-flavoured aliases of package script's prelude
// (plain JavaScript objects). docs/security.md lists them; a change here
// is a change of what a definition can reach, and belongs there too.
const scriptGlobals = "AggregateError Array Boolean Date Double Error EvalError Float Function GoError " +
	"Infinity Integer JSON Long Map Math NaN Number Object Promise Proxy RangeError ReferenceError Reflect " +
	"RegExp Set String Symbol SyntaxError TypeError URIError WeakMap WeakSet decodeURI decodeURIComponent " +
	"encodeURI encodeURIComponent escape globalThis isFinite isNaN java parseFloat parseInt undefined unescape"

// hostNames are what scripts in other engines reach the host through:
// none of them exists in a definition's scripts.
var hostNames = []string{
	"require", "module", "exports", "process", "Buffer", "global", "load", "loadWithNewGlobal", "print",
	"printErr", "console", "quit", "exit", "readFile", "readLine", "fetch", "XMLHttpRequest", "WebSocket",
	"setTimeout", "setInterval", "setImmediate", "queueMicrotask", "Java", "Packages", "JavaImporter",
	"importPackage", "importClass", "Deno", "Bun", "os", "fs", "net", "http",
}

// TestScriptScope runs a script task that lists what its global scope
// holds: the instance's variables, scriptGlobals and nothing of
// hostNames, and the java aliases are the prelude's few.
func TestScriptScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dbtest.OpenSQLite(t)).start()
	probe := `globals = Object.getOwnPropertyNames(globalThis).sort().join(" ");
found = [` + `"` + strings.Join(hostNames, `","`) + `"` + `].filter(function (n) { return typeof globalThis[n] !== "undefined"; }).join(" ");
javas = Object.keys(java).join(" ") + " | " + Object.keys(java.lang).join(" ") + " | " + Object.keys(java.util).join(" ") + " | " + Object.keys(java.io.File).join(" ");`
	h.deploy(`<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="scope">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <DataFields>
      <DataField Id="globals"><DataType><BasicType Type="STRING"/></DataType></DataField>
      <DataField Id="found"><DataType><BasicType Type="STRING"/></DataType></DataField>
      <DataField Id="javas"><DataType><BasicType Type="STRING"/></DataType></DataField>
    </DataFields>
    <Activities><Activity Id="probe"><Implementation><Task><TaskScript><Script ScriptGrammar="text/javascript">` +
		strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(probe) +
		`</Script></TaskScript></Task></Implementation></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`)
	id := h.startProcess("scope", "p", nil)
	h.idle()
	h.requireState(id, wftype.ProcessCompleted)
	vars := h.vars(id)
	var globals []string
	for _, name := range strings.Fields(vars["globals"].(string)) {
		if name != "globals" && name != "found" && name != "javas" { // the instance's variables
			globals = append(globals, name)
		}
	}
	require.Equal(t, scriptGlobals, strings.Join(globals, " "))
	require.Empty(t, vars["found"], "host objects a script could reach")
	require.Equal(t, "lang util io | Math String Integer Long Double Boolean | Date | pathSeparator separator", vars["javas"])
}
