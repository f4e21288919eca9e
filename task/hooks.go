package task

import (
	"time"

	"github.com/leatdev/leat/executor"
)

// Outcomes of a task's run, as HookTaskRun reports them.
const (
	OutcomeSucceeded = "succeeded" // the handler returned a result
	OutcomeRetried   = "retried"   // it failed and will run again after a backoff
	OutcomeFailed    = "failed"    // it failed with SkipRetry: no more attempts
	OutcomeDead      = "dead"      // it failed and its retries ran out
	OutcomeCancelled = "cancelled" // it was cancelled while it ran
	OutcomeSnoozed   = "snoozed"   // it asked to run again later (Snooze), the attempt not counted
)

// HookTaskRun is called, for metrics, after this worker recorded in Redis
// the outcome of one run of a task of queue: outcome is one of the
// Outcome* constants, attempt the run's attempt number (1 for the first
// run), took how long the handler ran. A run whose task was reclaimed
// meanwhile (its outcome is then not recorded) and a run handed back
// unfinished by a stopping worker are not reported.
//
// Give hooks to the app in app.Config.Hooks, beside the executor.Hook*
// ones; the same value may implement both, as metrics.Exporter does. The
// method must be cheap and safe for concurrent use.
type HookTaskRun interface {
	OnTaskRun(queue, outcome string, attempt int, took time.Duration)
}

// taskHooks returns the hooks among hs that implement HookTaskRun.
func taskHooks(hs []executor.Hook) []HookTaskRun {
	var out []HookTaskRun
	for _, h := range hs {
		if v, ok := h.(HookTaskRun); ok {
			out = append(out, v)
		}
	}
	return out
}

// outcomeOf maps the state finish.lua left a task in to the outcome
// reported; "" for none (a handback, or a run not recorded).
func outcomeOf(state string) string {
	switch State(state) {
	case Succeeded:
		return OutcomeSucceeded
	case Retrying:
		return OutcomeRetried
	case Failed:
		return OutcomeFailed
	case Dead:
		return OutcomeDead
	case Cancelled:
		return OutcomeCancelled
	case Scheduled:
		return OutcomeSnoozed
	}
	return ""
}
