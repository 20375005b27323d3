package test

// Admin changes are answered once every broker serves them (issue 15): a
// client that creates, extends or deletes a topic through one broker and
// then asks any other finds the change there, and a broker whose metadata
// lags holds the answer back until the request's timeout.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminAnsweredWhenEveryBrokerServes(t *testing.T) {
	// A long session, so a broker cut off from etcd for a few seconds
	// stays registered (and waited for).
	c := StartCluster(t, 3, WithSessionTimeout(30*time.Second))

	// Every broker describes topic with partitions partitions, each led
	// by a broker that answers ListOffsets for it at once.
	servedEverywhere := func(t *testing.T, topic string, partitions int) {
		t.Helper()
		for _, id := range c.IDs() {
			rt := describedBy(t, c, id, topic)
			if rt.ErrorCode != 0 || len(rt.Partitions) != partitions {
				t.Fatalf("broker %d describes %s with error %v and %d partitions, want %d partitions",
					id, topic, kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions), partitions)
			}
			for _, p := range rt.Partitions {
				if p.Leader < 1 {
					t.Fatalf("broker %d: %s[%d] has no leader", id, topic, p.Partition)
				}
				lo := kmsg.NewPtrListOffsetsRequest()
				lt := kmsg.NewListOffsetsRequestTopic()
				lt.Topic = topic
				lp := kmsg.NewListOffsetsRequestTopicPartition()
				lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Partition, -1, -1
				lt.Partitions = append(lt.Partitions, lp)
				lo.Topics = append(lo.Topics, lt)
				resp := requestTo(t, c, p.Leader, lo).(*kmsg.ListOffsetsResponse)
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Fatalf("leader %d of %s[%d] (per broker %d) answers ListOffsets with %v",
						p.Leader, topic, p.Partition, id, kerr.ErrorForCode(code))
				}
			}
		}
	}
	goneEverywhere := func(t *testing.T, topic string) {
		t.Helper()
		for _, id := range c.IDs() {
			if rt := describedBy(t, c, id, topic); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("broker %d describes deleted topic %s with error %v and %d partitions",
					id, topic, kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions))
			}
		}
	}

	t.Run("InSync", func(t *testing.T) {
		if code := createTopicVia(t, c, 1, "served", 3, 30000); code != 0 {
			t.Fatalf("create: %v", kerr.ErrorForCode(code))
		}
		servedEverywhere(t, "served", 3)

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.TimeoutMillis = 30000
		ct := kmsg.NewCreatePartitionsRequestTopic()
		ct.Topic, ct.Count = "served", 6
		cp.Topics = append(cp.Topics, ct)
		if code := requestTo(t, c, 2, cp).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != 0 {
			t.Fatalf("create partitions: %v", kerr.ErrorForCode(code))
		}
		servedEverywhere(t, "served", 6)

		if code := deleteTopicVia(t, c, 3, "served", 30000); code != 0 {
			t.Fatalf("delete: %v", kerr.ErrorForCode(code))
		}
		goneEverywhere(t, "served")
	})

	t.Run("LaggingBroker", func(t *testing.T) {
		// Broker 3 sees no metadata change while its etcd link is held.
		c.BlackholeEtcd(3)
		if code := createTopicVia(t, c, 1, "lagging", 3, 2000); code != kerr.RequestTimedOut.Code {
			t.Fatalf("create while broker 3 lags: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
		}
		if rt := describedBy(t, c, 3, "lagging"); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("broker 3 describes the topic with %v while cut off; the timeout was not its doing",
				kerr.ErrorForCode(rt.ErrorCode))
		}
		c.HealEtcd(3)
		WaitFor(t, 30*time.Second, func() error {
			if rt := describedBy(t, c, 3, "lagging"); rt.ErrorCode != 0 {
				return fmt.Errorf("broker 3 describes the topic with %v", kerr.ErrorForCode(rt.ErrorCode))
			}
			return nil
		})
		servedEverywhere(t, "lagging", 3)

		c.BlackholeEtcd(3)
		if code := deleteTopicVia(t, c, 1, "lagging", 2000); code != kerr.RequestTimedOut.Code {
			t.Fatalf("delete while broker 3 lags: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
		}
		if rt := describedBy(t, c, 3, "lagging"); rt.ErrorCode != 0 {
			t.Fatalf("broker 3 describes the deleted topic with %v while cut off; the timeout was not its doing",
				kerr.ErrorForCode(rt.ErrorCode))
		}
		c.HealEtcd(3)
		WaitFor(t, 30*time.Second, func() error {
			if rt := describedBy(t, c, 3, "lagging"); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				return fmt.Errorf("broker 3 still describes the deleted topic (%v)", kerr.ErrorForCode(rt.ErrorCode))
			}
			return nil
		})
	})

	t.Run("UnreachableBroker", func(t *testing.T) {
		// Broker 1 cannot ask broker 3, which stays registered: no client
		// reaches it either, so it is not waited for past two questions.
		admin := "samsa-admin-1"
		c.Broker(3).Kafka.BlackholePeer(admin)
		defer c.Broker(3).Kafka.HealPeer(admin)
		if code := createTopicVia(t, c, 1, "unreachable", 1, 20000); code != 0 {
			t.Fatalf("create while broker 3 cannot be asked: %v, want success", kerr.ErrorForCode(code))
		}
	})

	t.Run("Overtaken", func(t *testing.T) {
		// A creation whose topic another client deletes while the answer
		// waits for a lagging broker is answered, not timed out: a later
		// change overtook it.
		c.BlackholeEtcd(3)
		defer c.HealEtcd(3)
		created := make(chan int16, 1)
		go func() {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 20000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "overtaken", 1, 3
			req.Topics = append(req.Topics, rt)
			resp, err := requestToErr(c, 1, req)
			if err != nil {
				t.Errorf("create: %v", err)
				created <- -1
				return
			}
			created <- resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		}()
		WaitFor(t, 20*time.Second, func() error {
			if rt := describedBy(t, c, 2, "overtaken"); rt.ErrorCode != 0 {
				return fmt.Errorf("broker 2 describes the topic with %v", kerr.ErrorForCode(rt.ErrorCode))
			}
			return nil
		})
		if code := deleteTopicVia(t, c, 2, "overtaken", 20000); code != 0 {
			t.Fatalf("delete: %v", kerr.ErrorForCode(code))
		}
		if code := <-created; code != 0 {
			t.Fatalf("overtaken create: %v, want success", kerr.ErrorForCode(code))
		}
	})
}

// requestTo sends req to broker id itself (no routing, no retries).
func requestTo(t testing.TB, c *Cluster, id int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := requestToErr(c, id, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// requestToErr is requestTo for any goroutine.
func requestToErr(c *Cluster, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(id).Addr()), kgo.DialTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%T to broker %d: %w", req, id, err)
	}
	return resp, nil
}

// describedBy is broker id's Metadata answer for one topic, without
// auto-creation.
func describedBy(t testing.TB, c *Cluster, id int32, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp := requestTo(t, c, id, req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 {
		t.Fatalf("broker %d answered %d topics for %s", id, len(resp.Topics), topic)
	}
	return resp.Topics[0]
}

// createTopicVia creates a topic (replication factor 3) through broker id
// and returns the topic's error code.
func createTopicVia(t testing.TB, c *Cluster, id int32, topic string, partitions int32, timeoutMillis int32) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 3
	req.Topics = append(req.Topics, rt)
	return requestTo(t, c, id, req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
}

// deleteTopicVia deletes a topic through broker id and returns its error
// code.
func deleteTopicVia(t testing.TB, c *Cluster, id int32, topic string, timeoutMillis int32) int16 {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = timeoutMillis
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return requestTo(t, c, id, req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode
}
