// Command leat sends records to the partitioned streams of leat apps in
// Redis, using the stream definitions the apps registered there. See package
// github.com/leatdev/leat/cmd for the commands, and for embedding them in an
// app's own binary.
package main

import "github.com/leatdev/leat/cmd"

func main() { cmd.Main(nil) }
