//go:build unix

package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// lock takes the directory's lock (flock on .lock), waiting for it.
func (d *Dir) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(d.root, ".lock"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// ownGroup runs cmd in a process group of its own, killed whole when its
// context ends.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
