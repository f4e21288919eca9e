// Command leat sends records to the partitioned streams of leat apps in
// Redis and resets the positions of their processors, using the stream and
// processor definitions the apps registered there. See package
// github.com/leatdev/leat/cmd for the commands, and for embedding them in an
// app's own binary, where the worker command runs the app's processors.
package main

import "github.com/leatdev/leat/cmd"

func main() { cmd.Main(nil) }
