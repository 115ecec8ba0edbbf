package engine

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/goxpdl/goxpdl/wftype"
)

// instanceCache keeps the committed state of recently run process
// instances, so that the next event of an instance does not read it
// again. It holds only what committed: a run puts its committed state after its
// transaction commits, and forgets the instance when it fails or runs in
// a host's transaction (whose outcome the engine cannot see). A stale
// entry, left by another node or a host's transaction, costs one retry:
// the run's write of the process instance is fenced by its version and
// fails with a conflict, and the retry reads the database.
type instanceCache struct {
	mu  sync.Mutex // orders get/put/forget so an older state never replaces a newer one
	lru *lru.Cache[int64, committed]
}

func newInstanceCache(size int) (*instanceCache, error) {
	c, err := lru.New[int64, committed](size)
	if err != nil {
		return nil, err
	}
	return &instanceCache{lru: c}, nil
}

// get returns the cached state of instance id. The caller may change
// the returned rows (they are copies) but not what their pointers point
// to.
func (c *instanceCache) get(id int64) (committed, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.lru.Get(id)
	if !ok {
		return committed{}, false
	}
	s.acts = append(s.acts[:0:0], s.acts...)
	return s, true
}

// put keeps s unless a newer version of the instance is cached; a
// finished instance is dropped instead.
func (c *instanceCache) put(s committed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if wftype.ProcessState(s.pi.State).IsFinal() {
		c.lru.Remove(s.pi.ID)
		return
	}
	if old, ok := c.lru.Peek(s.pi.ID); ok && old.pi.Version > s.pi.Version {
		return
	}
	c.lru.Add(s.pi.ID, s)
}

// forget drops instance id.
func (c *instanceCache) forget(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(id)
}
