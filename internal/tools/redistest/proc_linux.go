package redistest

import (
	"os/exec"
	"syscall"
)

// bindToParent makes the kernel kill the server when the test process dies,
// so a killed test run leaves no redis-server behind.
func bindToParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
