package subprocess

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that killing the
// group ends the handler's children too, and has the kernel kill it if the
// worker dies.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group of cmd.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
	}
}

// killTree kills every process whose environment holds treeVar=token: the
// descendants of a handler process that left its process group (setsid,
// double forks) and were re-parented away from it. Rounds repeat while
// they find processes, so that one forking meanwhile is caught too; a
// process that cleared its environment, or runs as another user, is not
// found.
func killTree(token string) {
	mark := []byte(treeVar + "=" + token + "\x00")
	self := os.Getpid()
	for range 5 {
		dir, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := 0
		for _, d := range dir {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
			if err != nil || !(bytes.HasPrefix(env, mark) || bytes.Contains(env, append([]byte{0}, mark...))) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				found++
			}
		}
		if found == 0 {
			return
		}
	}
}
