package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarizeStacksGroupsGoroutinesByWhereTheyWait(t *testing.T) {
	t.Parallel()
	dump := `time=2026-11-22T04:36:10.202Z level=INFO msg="node started"
SIGQUIT: quit
PC=0x47a1c1 m=0 sigcode=0

goroutine 0 gp=0x192c7e0 m=0 mp=0x192e3e0 [idle]:
runtime.futex(0x192e520, 0x80, 0x0)
	/usr/local/go/src/runtime/sys_linux_amd64.s:557 +0x21

goroutine 7 gp=0xc000102000 m=nil [sync.Cond.Wait, 2 minutes]:
runtime.gopark(0x1?, 0x2?)
	/usr/local/go/src/runtime/proc.go:460 +0xce
sync.runtime_notifyListWait(0xc0001, 0x5)
	/usr/local/go/src/runtime/sema.go:606 +0x15d
github.com/goxpdl/goxpdl/engine.(*groupCommitter).do(0xc00012, {0x1, 0x2})
	/work/main/engine/groupcommit.go:88 +0x1a5
created by github.com/panjf2000/ants/v2.(*goWorker).run in goroutine 12

goroutine 8 gp=0xc000102001 m=nil [sync.Cond.Wait]:
runtime.gopark(0x1?, 0x2?)
	/usr/local/go/src/runtime/proc.go:460 +0xce
sync.runtime_notifyListWait(0xc0001, 0x6)
	/usr/local/go/src/runtime/sema.go:606 +0x15d
github.com/goxpdl/goxpdl/engine.(*groupCommitter).do(0xc00012, {0x1, 0x2})
	/work/main/engine/groupcommit.go:88 +0x1a5

goroutine 9 [select]:
runtime.gopark(0x1?, 0x2?)
	/usr/local/go/src/runtime/proc.go:460 +0xce
main.pause({0x1, 0x2}, 0x2faf080)
	/work/main/internal/crashtest/main.go:200 +0x8e
`
	path := filepath.Join(t.TempDir(), "node-1.run01.log")
	require.NoError(t, os.WriteFile(path, []byte(dump), 0o600))

	groups, err := summarizeStacks(path)
	require.NoError(t, err)
	require.Equal(t, []string{
		"2× [sync.Cond.Wait] sync.runtime_notifyListWait <- engine.(*groupCommitter).do",
		"1× [select] main.pause <- main.pause",
	}, groups, "the runtime's own goroutine 0 has no goxpdl frame and is left out")
}
