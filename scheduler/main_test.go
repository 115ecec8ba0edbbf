package scheduler_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every Scheduler
// a test starts must be stopped, and Stop must release both pools.
//
// IgnoreCurrent: importing ants starts its package-level default pool
// (two goroutines, purge and ticktock) at init. goxpdl never uses that
// pool; the goroutines it does own start later and are checked.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }
