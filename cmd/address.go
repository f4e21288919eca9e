package cmd

import (
	"errors"
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/urfave/cli/v2"
)

// lookupAddress opens the task queue an enqueue names: "queue", or
// "queue.level" for one of its priority levels (task.LookupLevel), whose
// level is added to opts. A level in the address and another --priority
// is a usage error, as are an unknown queue and an unknown level.
func lookupAddress(c *cli.Context, a *app.App, address string, opts []task.EnqueueOption) (*rawQueue, []task.EnqueueOption, error) {
	q, level, err := task.LookupLevel(c.Context, a, address)
	switch {
	case errors.Is(err, task.ErrUnknownQueue):
		return nil, nil, unknownQueue(c.Context, a, err)
	case errors.Is(err, task.ErrUnknownLevel):
		return nil, nil, usageError{err}
	case err != nil:
		return nil, nil, err
	}
	if level == "" {
		return q, opts, nil
	}
	if p := c.String(flagPriority); p != "" && p != level {
		return nil, nil, usageError{fmt.Errorf("%s names level %q of queue %s, --%s %q another", address, level, q.Name(), flagPriority, p)}
	}
	return q, append(opts, task.Priority(level)), nil
}
