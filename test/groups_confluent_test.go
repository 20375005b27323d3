//go:build cgo

package test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Three confluent-kafka-go (librdkafka) consumers share a six-partition
// topic, with the eager range strategy and with cooperative-sticky
// (incremental rebalancing), committing automatically.
func TestGroupConfluent(t *testing.T) {
	b := groupBroker(t)
	for _, strategy := range []string{"range", "roundrobin", "cooperative-sticky"} {
		t.Run(strategy, func(t *testing.T) {
			ctx := testContext(t, 90*time.Second)
			topic, group := "confluent-group-"+strategy, "confluent-"+strategy
			produce := sharedTopic(t, ctx, b.Addr, topic)
			c := newTally()
			cctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			for i := range 3 {
				cons, err := kafka.NewConsumer(&kafka.ConfigMap{
					"bootstrap.servers":             b.Addr,
					"group.id":                      group,
					"auto.offset.reset":             "earliest",
					"partition.assignment.strategy": strategy,
					"session.timeout.ms":            6000,
					"heartbeat.interval.ms":         500,
					"auto.commit.interval.ms":       100,
					"fetch.wait.max.ms":             100,
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := cons.Subscribe(topic, nil); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer cons.Close()
					for cctx.Err() == nil {
						switch e := cons.Poll(100).(type) {
						case *kafka.Message:
							c.add(i, string(e.Value))
						case kafka.Error:
							if e.IsFatal() {
								t.Errorf("confluent consumer %d: %v", i, e)
								return
							}
						}
					}
				}()
			}
			waitGroupShared(t, ctx, b.Addr, group, 3)
			c.wait(t, produce(50), 3)
		})
	}
}
