// Package rdb is where leat's runtime talks to Redis: every command the
// executor, the app and the CLI send, as typed functions, beside the Lua
// scripts of internal/scripts and the key names of internal/keys. The
// runtime packages hold the logic; the protocol (which command, which
// arguments, how a reply is read) lives here, so it can be read, tested
// and changed in one place.
//
// The fetcher's hot path (fetch.go: fenced reads in a transaction, blocking
// XREAD over idle partitions, CLIENT UNBLOCK) is here too, as operations on
// the connections the executor keeps; where the executor builds a pipeline
// as it goes, a helper queues the commands on the pipeline it is given, so
// every read keeps its round trips. Making and closing clients and
// connections stays with their owners (executor/connections.go, app).
package rdb
