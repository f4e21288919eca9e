// Package e2e holds leat's end-to-end tests of the dashboard: a real app
// on a real redis-server, served by package api, driven in headless
// Chromium; and of the control plane: the leat binary serving worker pools
// and running their deployments from a git repository (TestControlPlane,
// which needs python3 with venv and git). It is a module of its own so that the browser driver never
// enters the library's module graph.
//
// The tests need redis-server and Chromium (Debian package chromium). When
// Chromium is missing they are skipped, unless CI=true, where they fail.
// LEAT_SCREENSHOT names a PNG file to save the dashboard's picture to.
// LEAT_SCREENSHOT_FLOW and LEAT_SCREENSHOT_FLOW_WIDE name PNG files for
// TestDashboardFlows's pictures of a diamond flow and of a wide layer
// opened.
// LEAT_SCREENSHOT_256=FILE.png makes the 256-partition test collect a
// minute of history first, then save the stream view to FILE.png and the
// overview and queue views beside it (FILE-overview.png, FILE-queue.png).
package e2e
