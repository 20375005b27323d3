//go:build cgo

package test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluent-kafka-go (librdkafka) consumers through runGroupScenario, with
// the eager range and roundrobin strategies and with cooperative-sticky
// (incremental rebalancing), committing each record as it is consumed.
func TestGroupConfluent(t *testing.T) {
	for _, strategy := range []string{"range", "roundrobin", "cooperative-sticky"} {
		t.Run(strategy, func(t *testing.T) {
			runGroupScenario(t, "confluent-"+strategy, func(t *testing.T, ctx context.Context, bootstrap []string, group, topic, clientID string, id int, c *tally) func() {
				cons, err := kafka.NewConsumer(&kafka.ConfigMap{
					"bootstrap.servers":             strings.Join(bootstrap, ","),
					"client.id":                     clientID,
					"group.id":                      group,
					"auto.offset.reset":             "earliest",
					"partition.assignment.strategy": strategy,
					"session.timeout.ms":            3000,
					"heartbeat.interval.ms":         300,
					"enable.auto.commit":            false,
					"fetch.wait.max.ms":             100,
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := cons.Subscribe(topic, nil); err != nil {
					t.Fatal(err)
				}
				cctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for cctx.Err() == nil {
						if m, ok := cons.Poll(100).(*kafka.Message); ok {
							c.add(id, string(m.Value))
							_, _ = cons.CommitMessage(m)
						}
					}
				}()
				return sync.OnceFunc(func() { cancel(); <-done; cons.Close() })
			})
		})
	}
}
