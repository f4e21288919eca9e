package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-redisstream/pkg/redisstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
)

// wmTopic is the stream watermill publishes to and subscribes from, under
// the benchmark's key prefix so that cleaning deletes it.
func wmTopic(sp bench.Space) string { return sp.Prefix() + ":watermill" }

// wmPublisher returns a watermill publisher on a client of its own, which
// closing the publisher closes.
func wmPublisher(dial func() *redis.Client) (*redisstream.Publisher, error) {
	client := dial()
	return redisstream.NewPublisher(redisstream.PublisherConfig{
		Client: client, Marshaller: redisstream.DefaultMarshallerUnmarshaller{},
	}, watermill.NopLogger{})
}

// wmPublish is the workload that times publishing cfg.Events messages of
// cfg.PayloadBytes bytes with watermill-redisstream, one Publish call each,
// from the number of goroutines given.
func wmPublish(dial func() *redis.Client, sp bench.Space, cfg bench.Config, goroutines int) bench.Workload {
	return bench.Timed(peerWatermill, bench.FigureRate, cfg.Events, func(ctx context.Context) (time.Duration, error) {
		pub, err := wmPublisher(dial)
		if err != nil {
			return 0, err
		}
		defer pub.Close()
		payload := make([]byte, cfg.PayloadBytes)
		topic := wmTopic(sp)
		start := time.Now()
		err = bench.Spread(ctx, cfg.Events, goroutines, func(ctx context.Context, i int) error {
			m := message.NewMessage(strconv.Itoa(i), payload)
			m.Metadata.Set("key", keyOf(i))
			return pub.Publish(topic, m)
		})
		return time.Since(start), err
	})
}

// wmSubscribe is the workload that publishes cfg.Events messages
// (untimed), then times the number of subscribers given, in one consumer
// group, receiving and acknowledging them all, from subscribing to the
// last acknowledgement.
func wmSubscribe(dial func() *redis.Client, sp bench.Space, cfg bench.Config, subscribers int) bench.Workload {
	return bench.TimedEvents(peerWatermill, cfg.Events, sp.Client(), func(ctx context.Context, span *bench.CPUSpan) (time.Duration, error) {
		pub, err := wmPublisher(dial)
		if err != nil {
			return 0, err
		}
		defer pub.Close()
		payload := make([]byte, cfg.PayloadBytes)
		topic := wmTopic(sp)
		const batch = 1000
		for i := 0; i < cfg.Events; i += batch {
			ms := make([]*message.Message, 0, batch)
			for j := i; j < min(i+batch, cfg.Events); j++ {
				m := message.NewMessage(strconv.Itoa(j), payload)
				m.Metadata.Set("key", keyOf(j))
				ms = append(ms, m)
			}
			if err := pub.Publish(topic, ms...); err != nil {
				return 0, fmt.Errorf("fill: %w", err)
			}
		}

		sctx, stop := context.WithCancel(ctx)
		defer stop()
		var acked atomic.Int64
		all := make(chan struct{})
		var once sync.Once
		var subs []*redisstream.Subscriber
		var wg sync.WaitGroup
		defer func() {
			stop()
			for _, s := range subs {
				s.Close()
			}
			wg.Wait()
		}()
		if err := span.Start(ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		for i := range subscribers {
			client := dial() // closing the subscriber closes it
			s, err := redisstream.NewSubscriber(redisstream.SubscriberConfig{
				Client: client, Unmarshaller: redisstream.DefaultMarshallerUnmarshaller{},
				Consumer: "c" + strconv.Itoa(i), ConsumerGroup: "bench", OldestId: "0",
				BlockTime: 100 * time.Millisecond, DisableIndefiniteInitialBlock: true,
			}, watermill.NopLogger{})
			if err != nil {
				client.Close()
				return 0, err
			}
			subs = append(subs, s)
			ch, err := s.Subscribe(sctx, topic)
			if err != nil {
				return 0, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for m := range ch {
					m.Ack()
					if acked.Add(1) == int64(cfg.Events) {
						once.Do(func() { close(all) })
					}
				}
			}()
		}
		select {
		case <-all:
			d := time.Since(start)
			return d, span.Stop(ctx)
		case <-ctx.Done():
			return 0, errors.Join(ctx.Err(), fmt.Errorf("%d of %d acknowledged", acked.Load(), cfg.Events))
		}
	})
}

// keyOf is the partition key of message i, one of 1,000 as in leat's
// records, carried in the metadata.
func keyOf(i int) string { return "customer-" + strconv.Itoa(i%1000) }
