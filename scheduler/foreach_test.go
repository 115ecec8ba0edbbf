package scheduler_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/scheduler"
)

func TestForEachCallsEveryIndexOnce(t *testing.T) {
	t.Parallel()
	for _, parallel := range []int{0, 1, 3, 50} {
		var mu sync.Mutex
		seen := map[int]int{}
		scheduler.ForEach(20, parallel, func(i int) {
			mu.Lock()
			seen[i]++
			mu.Unlock()
		})
		require.Len(t, seen, 20, "parallel %d", parallel)
		for i, n := range seen {
			require.Equal(t, 1, n, "index %d, parallel %d", i, parallel)
		}
	}
	scheduler.ForEach(0, 4, func(int) { t.Fatal("no index") })
}
