//go:build unix && !linux

package subprocess

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that killing the
// group ends the handler's children too.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group of cmd.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
}

// killTree does nothing: finding the processes that left a handler's
// process group takes Linux's /proc.
func killTree(string) {}
