// Package rdb is where leat's runtime talks to Redis: every command the
// executor, the app and the CLI send, as typed functions, beside the Lua
// scripts of internal/scripts and the key names of internal/keys. The
// runtime packages hold the logic; the protocol (which command, which
// arguments, how a reply is read) lives here, so it can be read, tested
// and changed in one place.
//
// The fetcher's hot path (fenced reads in a transaction, blocking XREAD
// over idle partitions, CLIENT UNBLOCK) keeps its own connections and stays
// in package executor, next to the buffering it serves.
package rdb
