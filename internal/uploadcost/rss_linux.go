package main

import "syscall"

// residentPeak returns the process's peak resident memory in bytes.
func residentPeak() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) << 10 // in KiB on Linux
}
