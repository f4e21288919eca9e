package redistest

import "sync"

var (
	atExitMu sync.Mutex
	atExit   []func()
)

// AtExit registers f to run once the tests of the package ran, before Main
// exits: it removes what the tests built for all of them (a temporary
// directory of compiled programs, say).
func AtExit(f func()) {
	atExitMu.Lock()
	defer atExitMu.Unlock()
	atExit = append(atExit, f)
}

func runAtExit() {
	atExitMu.Lock()
	fs := atExit
	atExit = nil
	atExitMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
