package cmd

import (
	"io"
	"os"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far a long command is: a one-line bar on w when w is a
// terminal, nothing otherwise (pipes, files, tests). The zero value shows
// nothing.
//
// The bar fits the terminal's width as it was when the bar started: on a
// narrow terminal it drops the description, then the counts, then the bar
// itself, rather than wrapping into a new line at every update.
type progress struct {
	bar *progressbar.ProgressBar
}

// progress units: records counted one by one, or bytes of input.
const (
	unitEvents = "events"
	unitBytes  = "bytes"
)

// newProgress starts a bar for total units (-1 when unknown) on w.
func newProgress(w io.Writer, total int64, description, unit string) progress {
	f, ok := w.(*os.File)
	if !ok || total == 0 || !term.IsTerminal(int(f.Fd())) {
		return progress{}
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		cols = 80
	}
	return newProgressWidth(w, cols, total, description, unit)
}

// Widths of the parts of a bar line, in columns.
const (
	barMinWidth  = 10
	barMaxWidth  = 40
	percentWidth = len("  100% ||  ") + 1
	bytesWidth   = len(" (1023.9 MB/1023.9 MB, 1023.9 MB/s) ")
	elapsedWidth = len(" [59m59s]")
)

// newProgressWidth is newProgress on a terminal of cols columns.
func newProgressWidth(w io.Writer, cols int, total int64, description, unit string) progress {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetSpinnerChangeInterval(0), // no goroutine: render on Add only
	}
	countWidth := bytesWidth
	if unit == unitBytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
	} else {
		d := len(strconv.FormatInt(max(total, 0), 10))
		countWidth = len(" (/, 123456789 "+unit+"/s) ") + 2*d
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	if total < 0 {
		countWidth += elapsedWidth
	}
	room := cols - 1 - percentWidth
	descWidth := len(description) + 1
	switch {
	case room-descWidth-countWidth >= barMinWidth:
		opts = append(opts, progressbar.OptionSetDescription(description),
			progressbar.OptionSetWidth(min(barMaxWidth, room-descWidth-countWidth)))
	case room-countWidth >= barMinWidth:
		opts = append(opts, progressbar.OptionSetWidth(min(barMaxWidth, room-countWidth)))
	case room >= barMinWidth && total >= 0:
		opts = []progressbar.Option{
			progressbar.OptionSetWriter(w),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetSpinnerChangeInterval(0),
			progressbar.OptionSetWidth(min(barMaxWidth, room)),
		}
	default:
		return progress{} // too narrow for a useful line
	}
	return progress{bar: progressbar.NewOptions64(total, opts...)}
}

// add advances the bar by n units.
func (p progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// clear erases the bar, so that the next line written starts clean.
func (p progress) clear() {
	if p.bar != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
	}
}
