package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
)

// TestTakenStepsComeBackWhenTheirCommitFails: with two steps a chain,
// a split into six sends B3 ... B6 to the instance's mailbox, and B3's
// step takes B4 and B5 into its chain (TestChainTakesTheStepsQueuedInTheMailbox).
// That transaction's COMMIT fails: with a deadlock the transaction runs
// again and takes them again; with a lost connection it is given up, B3
// is retried after its backoff and B4 and B5 go back to the mailbox. Either
// way every branch's business write commits once and every branch runs
// once.
func TestTakenStepsComeBackWhenTheirCommitFails(t *testing.T) {
	t.Parallel()
	for _, d := range faultDialects {
		for name, err := range map[string]error{"deadlock": faultdb.Deadlock(d.dialect), "connection-lost": faultdb.ConnectionLost(d.dialect)} {
			t.Run(d.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				in := faultdb.New()
				db := d.open(t, in.OpenOpts())
				quiet := faultdb.Exempt(t.Context())
				require.NoError(t, db.WithContext(quiet).Exec("CREATE TABLE fan_commit (k VARCHAR(64) NOT NULL)").Error)
				h := newHarness(t, db, func(c *engine.Config) {
					c.Clock = timer.Real()
					c.ChainSteps = 2
				})
				h.e.RegisterApplication("risky", func(ctx context.Context, c *engine.Call) (map[string]any, error) {
					return nil, c.Tx.WithContext(ctx).Exec("INSERT INTO fan_commit (k) VALUES (?)", c.ActivityID).Error
				})
				h.start()
				h.deploy(fanToolPackage("fancommit", 6))
				// The first transaction to write a row is the schedule's
				// (B1, B2); the second is B3's, with B4 and B5 taken.
				in.Arm(faultdb.Fault{Kind: faultdb.Commit, At: 2, Err: err, Query: "fan_commit"})
				id := h.startProcess("fancommit", "", nil)
				h.requireState(id, wftype.ProcessCompleted)

				require.Equal(t, int64(1), in.Stats().Injected[faultdb.Commit])
				var rows []string
				require.NoError(t, db.WithContext(quiet).Raw("SELECT k FROM fan_commit ORDER BY k").Scan(&rows).Error)
				require.Equal(t, []string{"B1", "B2", "B3", "B4", "B5", "B6"}, rows)
				require.Equal(t, map[string]int{"Split": 1, "B1": 1, "B2": 1, "B3": 1, "B4": 1, "B5": 1, "B6": 1, "Join": 1}, startedOnce(t, h.e, id))
			})
		}
	}
}
