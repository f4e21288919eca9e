package executor

import (
	"context"
	"errors"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/scripts"
)

// uncount sets, in Redis, the delivery counter of each entry that stays
// pending on p (pending, and unhanded: buffered and never taken) to the
// times the processor was given it: Redis counted a delivery when the entry
// was read, and knows nothing of retries in place. The next owner's claim
// then counts its own delivery on top, so Event.Redelivered is true only for
// entries a processor was really given before. After a crash this cannot
// run: entries the dead executor had read count as delivered once.
func (p *partition) uncount(ctx context.Context, unhanded []core.Delivery) {
	counts := map[string]int64{}
	add := func(d core.Delivery, given bool) {
		if d.ID == "" || errors.Is(d.Err, core.ErrTrimmed) {
			return // a trim notice, or an entry gone from the stream
		}
		n := d.Deliveries
		if !given {
			n--
		}
		counts[d.ID] = max(n, 0)
	}
	for i, d := range p.pending {
		add(d, i < p.handed)
	}
	for _, d := range unhanded {
		add(d, false)
	}
	if len(counts) == 0 || p.lock == nil {
		return
	}
	e := p.e
	if _, err := scripts.SetDeliveries(ctx, e.client, p.lockKey, p.key, p.lock.Value(), e.processor, e.id, counts); err != nil {
		p.log.Debug("delivery counters not set", "error", err)
	}
}
