package diagram

import (
	"context"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Cache keeps layouts by definition version, so that a page draws a
// definition's diagram without laying it out again. It is safe for
// concurrent use. Two callers that miss the same key at once may both lay
// it out; the result is the same.
type Cache struct {
	layouts *lru.Cache[cacheKey, *Layout]
}

type cacheKey struct {
	version, process string
	opts             Options
}

// NewCache returns a cache holding at most size layouts, dropping the
// least recently used.
func NewCache(size int) (*Cache, error) {
	c, err := lru.New[cacheKey, *Layout](size)
	if err != nil {
		return nil, fmt.Errorf("diagram: new cache: %w", err)
	}
	return &Cache{layouts: c}, nil
}

// Layout returns the layout of process processID of pkg with opts, laid
// out on the first call for the key. version must identify pkg's content:
// a deployed definition's id and version, never a name that can be
// deployed again with other content. Errors are not cached.
func (c *Cache) Layout(ctx context.Context, version string, pkg *xpdl.Package, processID string, opts Options) (*Layout, error) {
	k := cacheKey{version: version, process: processID, opts: opts}
	if l, ok := c.layouts.Get(k); ok {
		return l, nil
	}
	l, err := NewLayout(ctx, pkg, processID, opts)
	if err != nil {
		return nil, err
	}
	c.layouts.Add(k, l)
	return l, nil
}
