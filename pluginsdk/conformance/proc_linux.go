package conformance

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill the plugin if the test process dies,
// so a crashed test run leaves no orphans.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
