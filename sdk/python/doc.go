// Package leatpython holds the tests of leat's Python SDK (the leat
// package beside this file): sdk_test.go runs its unittest suite against a
// real "leat serve" and real "leat worker --exec" processes on a real
// redis-server, and installs the package with pip, offline, in a fresh
// virtual environment. It is a Go module of its own, in the repository's
// workspace (go.work), so that "go test" runs these tests with the others.
// LEAT_TEST_PYTHON names the Python interpreter to test with (default
// python3).
package leatpython
