package runner

import (
	"errors"
	"time"

	"github.com/leatdev/leat/executor"
)

// retryDelay returns the wait asked for by a RetryAfter in err's chain, and
// whether a retry middleware decided on it.
func retryDelay(err error) (d time.Duration, ok, decided bool) {
	var ra *executor.RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.After, 0), true, ra.Decided
	}
	return 0, false, false
}
