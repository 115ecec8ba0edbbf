package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// TestPoolConfig: the pools' sizes reach the scheduler and show in
// Stats; contradictory sizes are a configuration error naming the field.
func TestPoolConfig(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		sizes := func(s engine.Stats) []int {
			return []int{s.Scheduler.CriticalWorkers, s.Scheduler.NormalWorkers, s.Scheduler.NormalWorkersMin, s.Scheduler.NormalWorkersMax}
		}

		h := newHarness(t, db) // Stats are there before Start
		require.Equal(t, []int{4, 16, 16, 128}, sizes(h.e.Stats()), "defaults")

		h = newHarness(t, db, func(c *engine.Config) {
			c.CriticalWorkers, c.NormalWorkers, c.NormalWorkersMin, c.NormalWorkersMax = 2, 8, 4, 32
		})
		require.Equal(t, []int{2, 8, 4, 32}, sizes(h.e.Stats()))

		_, err := engine.New(engine.Config{DB: db, SkipMigrate: true, NormalWorkersMin: 8, NormalWorkersMax: 4})
		require.ErrorIs(t, err, engine.ErrConfig)
		var cfgErr *scheduler.ConfigError
		require.ErrorAs(t, err, &cfgErr)
		require.Equal(t, "NormalWorkersMin", cfgErr.Field)
	})
}
