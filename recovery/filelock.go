package recovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/gofrs/flock"
)

// ErrDatabaseInUse is returned by LockFile when another process holds the
// database file.
var ErrDatabaseInUse = errors.New("the database is in use by another engine process")

// fileLocks counts this process's holders of each locked file: the
// engines of one process share a SQLite database, other processes are
// kept out.
var fileLocks = struct {
	sync.Mutex
	held map[string]*heldLock
}{held: map[string]*heldLock{}}

type heldLock struct {
	lock  *flock.Flock
	users int
}

// LockFile makes this process the only engine process on the SQLite
// database at path: it takes an exclusive lock on path + "-goxpdl.lock"
// (flock, released by the kernel when the process dies, so a killed
// engine never leaves it behind). Engines of the same process share the
// lock; first reports whether this call took it (no other engine of this
// process runs on the file, so nodes registered there are dead). Call
// release when the engine stops. Another process holding the lock is
// ErrDatabaseInUse.
func LockFile(path string) (release func(), first bool, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false, err
	}
	name := abs + "-goxpdl.lock"
	fileLocks.Lock()
	defer fileLocks.Unlock()
	h := fileLocks.held[name]
	if h == nil {
		l := flock.New(name)
		ok, err := l.TryLock()
		if err != nil {
			return nil, false, fmt.Errorf("lock %s: %w", name, err)
		}
		if !ok {
			return nil, false, fmt.Errorf("%w: %s (lock file %s); one engine process per SQLite file, use MySQL/MariaDB for several nodes",
				ErrDatabaseInUse, abs, name)
		}
		h = &heldLock{lock: l}
		fileLocks.held[name] = h
		first = true
	}
	h.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			fileLocks.Lock()
			defer fileLocks.Unlock()
			h.users--
			if h.users == 0 {
				_ = h.lock.Unlock()
				delete(fileLocks.held, name)
			}
		})
	}, first, nil
}
