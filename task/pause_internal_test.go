package task

import "time"

// A paused worker polls far slower in tests than it does for real, so that a
// test whose worker resumes in time shows that the Resume message woke it.
func init() { pausePoll = 30 * time.Second }
