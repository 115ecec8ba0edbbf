package xpdl_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

func TestReadGraphics(t *testing.T) {
	t.Parallel()

	t.Run("XPDL2", func(t *testing.T) {
		t.Parallel()
		src := xpdlDoc(ns21, `<Pools><Pool Id="pool" Process="wp" Orientation="VERTICAL">
<Lanes><Lane Id="l1" Name="Clerk"><NodeGraphicsInfos><NodeGraphicsInfo ToolId="T" Width="600" Height="120"><Coordinates XCoordinate="30" YCoordinate="0"/></NodeGraphicsInfo></NodeGraphicsInfos></Lane></Lanes>
<NodeGraphicsInfos><NodeGraphicsInfo ToolId="T" Width="630" Height="120"/></NodeGraphicsInfos>
</Pool></Pools>
<WorkflowProcesses><WorkflowProcess Id="wp">
<Activities>
<Activity Id="a"><Implementation><No/></Implementation><NodeGraphicsInfos><NodeGraphicsInfo ToolId="T" LaneId="l1" Width="90" Height="50"><Coordinates XCoordinate="40" YCoordinate="20"/></NodeGraphicsInfo></NodeGraphicsInfos></Activity>
<Activity Id="b"><Implementation><No/></Implementation></Activity>
</Activities>
<Transitions>
<Transition Id="t" From="a" To="b"><ConnectorGraphicsInfos><ConnectorGraphicsInfo ToolId="T">
<Coordinates XCoordinate="130" YCoordinate="45"/><Coordinates XCoordinate="160.5" YCoordinate="45"/><Coordinates XCoordinate="160.5" YCoordinate="90"/>
</ConnectorGraphicsInfo></ConnectorGraphicsInfos></Transition>
<Transition Id="u" From="b" To="a"/>
</Transitions>
</WorkflowProcess></WorkflowProcesses>`)
		pkg := mustRead(t, src)
		require.Len(t, pkg.Pools, 1)
		pool := pkg.Pools[0]
		require.Equal(t, "VERTICAL", pool.Orientation)
		require.Equal(t, []xpdl.NodeGraphics{{ToolID: "T", Width: 630, Height: 120}}, pool.Graphics)
		require.Equal(t, []xpdl.NodeGraphics{{ToolID: "T", X: 30, Width: 600, Height: 120}}, pool.Lanes[0].Graphics)

		a := onlyActivity(t, pkg, "a")
		require.Equal(t, []xpdl.NodeGraphics{{ToolID: "T", LaneID: "l1", X: 40, Y: 20, Width: 90, Height: 50}}, a.Graphics)

		proc := pkg.Process("wp")
		require.Equal(t, []xpdl.ConnectorGraphics{{ToolID: "T", Points: []xpdl.Point{{X: 130, Y: 45}, {X: 160.5, Y: 45}, {X: 160.5, Y: 90}}}},
			proc.Transition("t").Graphics)
		require.Empty(t, proc.Transition("u").Graphics)
	})

	t.Run("JaWE", func(t *testing.T) {
		t.Parallel()
		src := processDoc(ns10, `<Activity Id="a"><Implementation><No/></Implementation><ExtendedAttributes>
<ExtendedAttribute Name="JaWE_GRAPH_PARTICIPANT_ID" Value="clerk"/>
<ExtendedAttribute Name="JaWE_GRAPH_OFFSET" Value="200,70"/>
</ExtendedAttributes></Activity>`+noActivity("b"), `<Transition Id="t" From="a" To="b"><ExtendedAttributes>
<ExtendedAttribute Name="JaWE_GRAPH_BREAK_POINTS" Value="488,17-241,17"/>
</ExtendedAttributes></Transition>
<Transition Id="u" From="b" To="a"><ExtendedAttributes>
<ExtendedAttribute Name="JaWE_GRAPH_BREAK_POINTS" Value="283,234"/>
</ExtendedAttributes></Transition>`)
		pkg := mustRead(t, src)
		require.Equal(t, []xpdl.NodeGraphics{{ToolID: "JaWE", LaneID: "clerk", X: 200, Y: 70}}, onlyActivity(t, pkg, "a").Graphics)
		proc := pkg.Process("wp")
		require.Equal(t, []xpdl.ConnectorGraphics{{ToolID: "JaWE", Points: []xpdl.Point{{X: 488, Y: 17}, {X: 241, Y: 17}}}},
			proc.Transition("t").Graphics)
		require.Equal(t, []xpdl.ConnectorGraphics{{ToolID: "JaWE", Points: []xpdl.Point{{X: 283, Y: 234}}}},
			proc.Transition("u").Graphics)
	})
}
