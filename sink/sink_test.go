package sink_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/sink"
)

func TestTopic(t *testing.T) {
	t.Parallel()
	m := sink.Message{ID: "7", Type: "process.started", Process: "Order.Intake v2", Instance: 42}
	for template, want := range map[string]string{
		"goxpdl.records":       "goxpdl.records",
		"goxpdl.{process}":     "goxpdl.Order_Intake_v2",
		"{process}.{process}":  "Order_Intake_v2.Order_Intake_v2",
		"wf-{process}-records": "wf-Order_Intake_v2-records",
	} {
		require.Equal(t, want, sink.Topic(template, m), template)
	}
	require.Equal(t, "_", sink.Token(""))
	require.Equal(t, "a_b-c____", sink.Token("a*b-c>é."), "each byte that is not safe")
	require.Equal(t, "42", m.Key())
	require.Equal(t, map[string]string{"goxpdl-id": "7", "goxpdl-type": "process.started", "goxpdl-process": "Order.Intake v2", "goxpdl-instance": "42"}, m.Headers())
}
