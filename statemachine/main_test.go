package statemachine_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// ants starts a default pool of its own when its package is
		// initialised; the engines' pools are created and released by
		// each test and stay checked.
		goleak.IgnoreCurrent(),
	)
}
