package chtest

import (
	"os/exec"
	"syscall"
)

// dieWithParent kills the server when the test binary dies (a timeout
// panic, a kill), so no server outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
