package task

import (
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// NewDefinition returns the definition a queue called name declared with
// opts records in the registry (see Definition), defaults filled in, or
// what is wrong with the name or the options: for tools that write the
// registry without declaring the queue on an App (a configuration file).
func NewDefinition(name string, opts ...Option) (Definition, error) {
	if err := rdb.CheckName("task queue", name); err != nil {
		return Definition{}, err
	}
	s, err := applyOptions(opts)
	if err != nil {
		return Definition{}, fmt.Errorf("task queue %q: %w", name, err)
	}
	c := core{name: name, set: s}
	return c.Definition(), nil
}
