// Package layout holds no code: its test asserts that leat's packages import
// one another in one direction only, as README's architecture section says:
//
//	stream  <-  rebalance  <-  executor  <-  app  <-  cmd
//
// with internal packages below them, and that no library package depends on
// the CLI library.
package layout
