package adversary_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/internal/adversary"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// errInjected is the fault the test injects.
var errInjected = errors.New("injected fault")

// TestFaultsAreInfo drives runs over a database whose gorm statements
// fail now and then (one in 40 while an operation runs; a small stand-in
// for the fault-injecting store of a test of its own): the run classifies
// those errors with Config.IsFault, pauses the faults while it checks
// (Config.Checking), and must find the engine in one of the model's
// possible worlds after every operation.
func TestFaultsAreInfo(t *testing.T) {
	t.Parallel()
	for _, d := range dbtest.Dialects {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					db := d.Open(t)
					var on, paused atomic.Bool
					var mu sync.Mutex
					rnd := rand.New(rand.NewPCG(uint64(seed), 2))
					inject := func(tx *gorm.DB) {
						if !on.Load() || paused.Load() {
							return
						}
						mu.Lock()
						fail := rnd.IntN(40) == 0
						mu.Unlock()
						if fail {
							_ = tx.AddError(fmt.Errorf("%w in %s", errInjected, tx.Statement.Table))
						}
					}
					cb := db.Callback()
					require.NoError(t, cb.Create().Before("gorm:create").Register("adversary:fault", inject))
					require.NoError(t, cb.Update().Before("gorm:update").Register("adversary:fault", inject))
					require.NoError(t, cb.Query().Before("gorm:query").Register("adversary:fault", inject))
					rep, err := adversary.Run(t.Context(), adversary.Config{DB: db, Seed: seed, Ops: 60,
						IsFault:  func(err error) bool { return errors.Is(err, errInjected) },
						Checking: func(checking bool) { paused.Store(checking) },
						Logf:     func(string, ...any) { on.Store(true) }, // from the first operation on, after the set-up
					})
					if f, ok := errors.AsType[*adversary.Failure](err); ok {
						t.Fatal(f.Error())
					}
					require.NoError(t, err)
					t.Logf("%d operations, %d with an unknown outcome", rep.Ops, rep.Faults)
				})
			}
		})
	}
}
