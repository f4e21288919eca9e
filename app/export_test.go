package app

import (
	"time"

	"github.com/leatdev/leat/internal/keys"
)

// SetJanitorEvery sets how often a's leader deletes dead consumers.
func SetJanitorEvery(a *App, d time.Duration) { a.janitorEvery = d }

// Keys returns a's Redis key space.
func Keys(a *App) keys.Space { return a.keys }
