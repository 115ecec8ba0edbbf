package nats_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// ants starts a default pool of its own when its package is
		// initialised (the engine's scheduler imports it).
		goleak.IgnoreCurrent(),
	)
}
