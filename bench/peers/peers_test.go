package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorkloadsTiny runs every workload on both engines with 5 instances
// on SQLite, so that the suite cannot rot: each must complete every
// instance, and W4 must count its duplicate completion.
func TestWorkloadsTiny(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{engineGoxpdl, engineGoWF} {
		for _, w := range []string{"W1", "W1s", "W2", "W3", "W4", "W5"} {
			t.Run(eng+"/"+w, func(t *testing.T) {
				t.Parallel()
				spec := runSpec{Engine: eng, Workload: w, DB: dbSQLite, SQLitePath: filepath.Join(t.TempDir(), "db.sqlite"),
					N: 5, Clients: 2, TimerLead: 3 * time.Second}
				res, err := runOne(context.Background(), spec)
				require.NoError(t, err)
				require.Zero(t, res.Failed)
				require.Positive(t, res.Rate)
				require.Positive(t, res.P50Ms)
				require.LessOrEqual(t, res.P50Ms, res.P99Ms)
				if w == "W4" {
					// Instance 0 of 5 gets its completion twice.
					require.Equal(t, 1, res.DupAccepted+res.DupRejected)
					if eng == engineGoxpdl {
						require.Equal(t, 1, res.DupRejected, "goxpdl refuses a second completion")
					}
				}
			})
		}
	}
}

// TestParkAndRestartTiny runs W6's two phases on one database: five
// parked instances, then a fresh engine that completes one of them.
func TestParkAndRestartTiny(t *testing.T) {
	t.Parallel()
	for _, eng := range []string{engineGoxpdl, engineGoWF} {
		t.Run(eng, func(t *testing.T) {
			t.Parallel()
			spec := runSpec{Engine: eng, Workload: "W6", DB: dbSQLite, SQLitePath: filepath.Join(t.TempDir(), "db.sqlite"),
				N: 5, Clients: 2, Phase: phasePark, WorkerName: w6WorkerName}
			park, err := runOne(context.Background(), spec)
			require.NoError(t, err)
			require.Zero(t, park.Failed)
			require.Positive(t, park.DBBytes)
			spec.Phase = phaseRestart
			restart, err := runOne(context.Background(), spec)
			require.NoError(t, err)
			require.Zero(t, restart.Failed)
			require.Positive(t, restart.RestartMs)
		})
	}
}

// TestRewritePacket: only a whole COM_QUERY packet holding the MySQL-only
// clause changes, and its length header follows the new length.
func TestRewritePacket(t *testing.T) {
	t.Parallel()
	packet := func(seq byte, body string) []byte {
		n := len(body)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, body...)
	}
	q := "\x03SELECT 1 FROM instances i LIMIT 1 FOR UPDATE OF i SKIP LOCKED"
	out, ok := rewritePacket(packet(0, q))
	require.True(t, ok)
	require.Equal(t, packet(0, "\x03SELECT 1 FROM instances i LIMIT 1 FOR UPDATE SKIP LOCKED"), out)

	for name, p := range map[string][]byte{
		"other query":      packet(0, "\x03SELECT 1 FOR UPDATE SKIP LOCKED"),
		"not a query":      packet(0, "\x16"+q[1:]), // COM_STMT_PREPARE
		"not sequence 0":   packet(1, q),
		"length mismatch":  packet(0, q)[:20],
		"shorter than one": {1, 0},
	} {
		_, ok := rewritePacket(p)
		require.False(t, ok, name)
	}
}

// TestMedian: odd and even counts.
func TestMedian(t *testing.T) {
	t.Parallel()
	require.InDelta(t, 2.0, median([]float64{3, 1, 2}), 0)
	require.InDelta(t, 2.5, median([]float64{4, 1, 2, 3}), 0)
	require.InDelta(t, 0.0, median(nil), 0)
}
