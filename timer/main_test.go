package timer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every Service,
// Periodic and Calendar a test starts must be stopped, and every database
// it opens closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
