package redistest

import (
	"bufio"
	"net"
	"sync"
	"testing"
)

// Monitor sends each command the server at addr runs (MONITOR: one line
// each, scripts' commands included, marked "lua]") to fn, on a goroutine of
// its own, until the returned stop is called or tb ends.
func Monitor(tb testing.TB, addr string, fn func(line string)) (stop func()) {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		tb.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	if l, err := rd.ReadString('\n'); err != nil || l != "+OK\r\n" {
		tb.Fatalf("redistest: MONITOR: %q %v", l, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			fn(line)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { conn.Close(); <-done }) }
	tb.Cleanup(stop)
	return stop
}
