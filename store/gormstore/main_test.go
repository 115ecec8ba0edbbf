package gormstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every database
// a test opens must be closed.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
