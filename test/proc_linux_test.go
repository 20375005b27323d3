package test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd's process when the test binary
// dies: a test that times out (go test panics, and no cleanup runs) leaves
// no broker behind, paused ones included.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
