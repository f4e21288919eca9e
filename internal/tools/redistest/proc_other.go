//go:build !linux

package redistest

import "os/exec"

// bindToParent does nothing where the kernel cannot tie a child's life to
// its parent's; Main still stops the server at the end of a normal run.
func bindToParent(cmd *exec.Cmd) {}
