//go:build !linux

package main

// residentPeak returns 0: the peak resident memory is measured on Linux
// only.
func residentPeak() uint64 { return 0 }
