package runner

import (
	"context"
	"errors"

	"strconv"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Exactly-once outputs: records the loop body stages for other streams
// (core.Stager.StageOutput, stream.Output) are sealed and committed with
// the table writes, in one script (rdb.CommitOutputs) that checks the
// lock, acknowledges, writes the tables and adds the records: to their
// partitions on standalone Redis; on Redis Cluster, where those live in
// other hash slots, to the partition's outbox, relayed to them right after
// the commit (relay) and by the next owner when it takes the partition
// (relayLeft), with a write that adds nothing already relayed.

// relayPage is how many outbox entries one relay round reads.
const relayPage = 1000

// StageOutput implements core.Stager.
func (p *partition) StageOutput(o core.Output) { p.outputs = append(p.outputs, o) }

// clustered reports whether the app's Redis is a Cluster, where outputs go
// through the outbox.
func (p *partition) clustered() bool {
	_, ok := p.e.app.(*redis.ClusterClient)
	return ok
}

func (p *partition) outbox() string { return p.e.keys.Outbox(p.e.stream.Name(), p.e.processor, p.n) }

// outputCommit is a commit's outputs as the commit script takes them, and
// the commit's name, the same for all its tries.
type outputCommit struct {
	entries []rdb.OutputEntry
	name    string
}

// prepareOutputs encodes outs for the commit script (to their partitions,
// or to the outbox on Redis Cluster) and names the commit: every try of
// one commit carries the same name, so that a try whose reply was lost is
// not applied twice by the next.
func (p *partition) prepareOutputs(ctx context.Context, outs []core.Output) (*outputCommit, error) {
	entries := make([]rdb.OutputEntry, len(outs))
	box := ""
	if p.clustered() {
		box = p.outbox()
	}
	for i, o := range outs {
		if err := o.Stream.Register(ctx); err != nil {
			return nil, err
		}
		e := rdb.OutputEntry{
			Key:    o.Stream.PartitionKey(o.Entry.Partition),
			Size:   o.Stream.Size(),
			Guard:  o.Stream.Guarded(),
			Fields: o.Stream.OutputFields(&o.Entry),
		}
		if box != "" {
			e = rdb.OutboxEntry(box, o.Stream.Name(), o.Entry.Partition, e)
		}
		entries[i] = e
	}
	p.commitSeq++
	return &outputCommit{entries: entries, name: p.lock.Value() + ":" + strconv.FormatUint(p.commitSeq, 10)}, nil
}

// commitOutputs runs one try of the commit of ids, ws and oc; a
// destination without room (a stream that never trims unprocessed
// entries) is waited for, with backoff, while ctx lasts.
func (p *partition) commitOutputs(ctx context.Context, ids []string, ws []rdb.TableWrite, oc *outputCommit) (bool, error) {
	mark := p.e.keys.Committed(p.e.stream.Name(), p.e.processor, p.n)
	for try := 1; ; try++ {
		held, err := rdb.CommitOutputs(ctx, p.e.app, p.lockKey, p.lock.Value(), p.key, mark, p.e.processor, oc.name, ids, ws, oc.entries)
		if !errors.Is(err, rdb.ErrOutputFull) {
			return held, err
		}
		if try == 1 {
			p.log.Warn("exactly-once outputs wait for room in a stream that never trims unprocessed entries", "error", err)
		}
		t := time.NewTimer(backoff(writeBackoff, writeMaxBackoff, try))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, err
		case <-t.C:
		}
	}
}

// relay relays the partition's outbox after a commit, on Redis Cluster;
// a failure leaves the entries in the outbox, for the next commit or owner.
func (p *partition) relay() {
	if !p.clustered() {
		return
	}
	ctx := p.ctx()
	err := ride(ctx, func(ctx context.Context) error {
		_, err := rdb.RelayOutbox(ctx, p.e.app, p.e.keys, p.outbox(), rdb.OutboxSource(p.e.stream.Name(), p.e.processor, p.n), relayPage)
		return err
	})
	if err != nil && ctx.Err() == nil {
		p.log.Warn("exactly-once outputs not relayed yet: they stay in the outbox, relayed after the next commit or by the next owner", "error", err)
	}
}

// relayLeft relays what a former owner left in the outbox, once the
// partition is acquired, on Redis Cluster.
func (p *partition) relayLeft() {
	if !p.clustered() {
		return
	}
	p.relay()
}
