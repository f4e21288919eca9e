package app

import "time"

// SetJanitorEvery sets how often a's leader deletes dead consumers.
func SetJanitorEvery(a *App, d time.Duration) { a.janitorEvery = d }
