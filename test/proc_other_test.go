//go:build !linux

package test

import "os/exec"

// dieWithTest is Linux-only (Pdeathsig); elsewhere a test binary that dies
// without its cleanups may leave brokers behind.
func dieWithTest(*exec.Cmd) {}
