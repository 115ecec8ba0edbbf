package diagram_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/xpdl"
)

// FuzzSVGText draws a two-activity process whose ids, names, lane and
// condition are the fuzzer's text, read through xpdl.Read as an upload
// would be, and checks that the SVG is well-formed, has no element but
// the drawing's own, and carries the ids as data. The activities carry
// JaWE offsets, so no Graphviz run slows the fuzzer down.
//
//	go test ./console/diagram -run '^$' -fuzz FuzzSVGText -fuzztime 1m
func FuzzSVGText(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, s, s)
	}
	f.Add("a", `x < 3 && y > "4"`, "Clerk")
	f.Fuzz(func(t *testing.T, id, text, lane string) {
		esc := func(s string) string {
			var b bytes.Buffer
			_ = xml.EscapeText(&b, []byte(s))
			return b.String()
		}
		act := func(id string, x int) string {
			return `<Activity Id="` + esc(id) + `" Name="` + esc(text) + `"><Implementation><No/></Implementation><Performer>` + esc(lane) + `</Performer>` +
				`<ExtendedAttributes><ExtendedAttribute Name="JaWE_GRAPH_PARTICIPANT_ID" Value="` + esc(lane) + `"/>` +
				`<ExtendedAttribute Name="JaWE_GRAPH_OFFSET" Value="` + string(rune('0'+x)) + `00,20"/></ExtendedAttributes></Activity>`
		}
		src := `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="p"><WorkflowProcesses><WorkflowProcess Id="wp"><Activities>` +
			act(id, 1) + act(id+"2", 3) + `</Activities><Transitions><Transition Id="` + esc(text) + `" From="` + esc(id) + `" To="` + esc(id+"2") + `">` +
			`<Condition>` + esc(text) + `</Condition></Transition></Transitions></WorkflowProcess></WorkflowProcesses></Package>`
		pkg, err := xpdl.Read(strings.NewReader(src), nil)
		if err != nil {
			return // not an upload the reader takes: nothing to draw
		}
		proc := pkg.Processes[0]
		l, err := diagram.NewLayout(context.Background(), pkg, "wp", diagram.Options{})
		require.NoError(t, err)
		svg := l.SVG(diagram.State{})
		activities, transitions := svgIDs(t, svg)
		var want []string
		for _, a := range proc.Activities {
			want = append(want, a.ID)
		}
		require.Equal(t, want, activities)
		require.Len(t, transitions, len(l.Edges))
		allowed := map[string]bool{"svg": true, "style": true, "defs": true, "marker": true, "path": true, "g": true, "rect": true,
			"line": true, "text": true, "tspan": true, "title": true, "polygon": true, "circle": true}
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				return
			}
			require.NoError(t, err)
			if se, ok := tok.(xml.StartElement); ok {
				require.True(t, allowed[se.Name.Local], "element %s", se.Name.Local)
			}
		}
	})
}
