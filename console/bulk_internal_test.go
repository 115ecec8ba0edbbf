package console

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

func TestDescribeFilter(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "every instance", describeFilter(engine.InstanceFilter{}))
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	assert.Equal(t, "state=Running state=Suspended package=review version=2 business_key=K started_after=2026-11-26T09:00:00Z incident=application ids=1,2",
		describeFilter(engine.InstanceFilter{States: []wftype.ProcessState{wftype.ProcessRunning, wftype.ProcessSuspended},
			Package: "review", Version: 2, BusinessKey: "K", StartedAfter: at, IncidentCause: engine.CauseApplication, IDs: []int64{1, 2}}))
}
