package stream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/leatdev/leat/stream"
)

// A processor or a middleware can tell a Redis failure that goes away by
// itself (a failover, a restart) from one that will not.
func ExampleIsTransient() {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	fmt.Println(stream.IsTransient(fmt.Errorf("save order: %w", reset)))
	fmt.Println(stream.IsTransient(io.EOF))
	fmt.Println(stream.IsTransient(context.Canceled))
	fmt.Println(stream.IsTransient(errors.New("order has no customer")))
	// Output:
	// true
	// true
	// false
	// false
}
