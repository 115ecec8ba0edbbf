package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// machineState is what the machine was like at a moment: a load that runs
// a hundred times slower than usual is most often a machine that is short
// of CPU or of disk, and the report should say so.
type machineState struct {
	// LoadAverage is /proc/loadavg's first three fields, "" where there is
	// none.
	LoadAverage string `json:"load_average,omitempty"`
	// DiskFreeMiB is the space free to us on the work folder's file
	// system, -1 when unknown.
	DiskFreeMiB int64 `json:"disk_free_mib"`
}

// readMachine reads the machine's state, with dir on the file system to
// measure.
func readMachine(dir string) machineState {
	s := machineState{DiskFreeMiB: -1}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil {
		s.DiskFreeMiB = int64(fs.Bavail) * fs.Bsize >> 20 //nolint:gosec // block counts fit in int64
	}
	return s
}

func (s machineState) text() string {
	load := s.LoadAverage
	if load == "" {
		load = "unknown"
	}
	disk := "unknown"
	if s.DiskFreeMiB >= 0 {
		disk = fmt.Sprintf("%.1f GiB", float64(s.DiskFreeMiB)/1024)
	}
	return fmt.Sprintf("load average %s, disk free %s", load, disk)
}
