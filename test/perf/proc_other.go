//go:build !linux

package main

import (
	"errors"
	"syscall"
	"time"
)

func childAttrs() *syscall.SysProcAttr { return nil }

// processCPU needs /proc: the side-by-side benchmark runs on Linux.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("perf measures broker CPU from /proc: Linux only")
}
