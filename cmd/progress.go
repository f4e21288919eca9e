package cmd

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress counts the records of a long send: a bar on w when w is a
// terminal, nothing otherwise (pipes, files, tests). The zero value shows
// nothing.
type progress struct {
	bar *progressbar.ProgressBar
}

func newProgress(w io.Writer, total int, description string) progress {
	f, ok := w.(*os.File)
	if !ok || total == 0 || !term.IsTerminal(int(f.Fd())) {
		return progress{}
	}
	// With a known total the bar starts no goroutine: it renders on Add.
	return progress{bar: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("events"),
		progressbar.OptionThrottle(100*time.Millisecond),
	)}
}

// add advances the bar by n records.
func (p progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// clear erases the bar, so that the next line written starts clean.
func (p progress) clear() {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
}
