package test

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
)

// adminBrokerDefaults are the broker settings of TestAdmin's broker: three
// partitions for topics that leave the count to the broker, and a broker
// default for one topic config (STATIC_BROKER_CONFIG).
func adminBrokerDefaults(t *testing.T) func(*broker.Config) {
	return func(c *broker.Config) {
		for k, v := range map[string]string{"num.partitions": "3", "log.retention.bytes": "123456789"} {
			if err := c.Set(k, v); err != nil {
				t.Fatalf("set %s: %v", k, err)
			}
		}
	}
}

// TestAdmin exercises the admin APIs through kadm (franz-go's admin client)
// and raw requests, against one broker with num.partitions=3 and
// log.retention.bytes=123456789.
func TestAdmin(t *testing.T) {
	b := StartBroker(t, adminBrokerDefaults(t))
	ctx := testContext(t, 90*time.Second)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)

	// unknown asserts that Metadata (asked directly, without creating
	// anything) does not know a topic.
	unknown := func(t *testing.T, topic string) {
		t.Helper()
		if md := topicMetadata(t, ctx, cl, topic); md.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("metadata of %q: error %v, want %v", topic, kerr.ErrorForCode(md.ErrorCode), kerr.UnknownTopicOrPartition)
		}
	}
	config := func(t *testing.T, rc kadm.ResourceConfig, name string) kadm.Config {
		t.Helper()
		for _, c := range rc.Configs {
			if c.Key == name {
				return c
			}
		}
		t.Fatalf("config %s of %s not described", name, rc.Name)
		return kadm.Config{}
	}
	// wantConfig asserts one described config's value and source.
	wantConfig := func(t *testing.T, rc kadm.ResourceConfig, name, value string, source kmsg.ConfigSource) {
		t.Helper()
		c := config(t, rc, name)
		if c.MaybeValue() != value || c.Source != source {
			t.Errorf("%s of %s: %q from %v, want %q from %v", name, rc.Name, c.MaybeValue(), c.Source, value, source)
		}
	}
	describeTopic := func(t *testing.T, topic string) kadm.ResourceConfig {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatalf("describe configs of %s: %v", topic, err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe configs of %s: %v / %v", topic, err, rc.Err)
		}
		return rc
	}
	create := func(t *testing.T, topic string, partitions int32, configs map[string]*string) kadm.CreateTopicResponse {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
		if err != nil {
			t.Fatalf("create topic %s: %v (%s)", topic, err, resp.ErrMessage)
		}
		waitPartitionsLed(t, cl, topic, resp.NumPartitions)
		return resp
	}

	t.Run("CreateTopicsBrokerDefaults", func(t *testing.T) {
		resp, err := adm.CreateTopic(ctx, -1, -1, nil, "defaults")
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 || resp.ID == (kadm.TopicID{}) {
			t.Errorf("created %d partitions, replication factor %d, id %v; want 3, 1, an id", resp.NumPartitions, resp.ReplicationFactor, resp.ID)
		}
		// v5+: the response carries the effective configs.
		for name, want := range map[string]struct {
			value  string
			source kmsg.ConfigSource
		}{
			"retention.bytes": {"123456789", kmsg.ConfigSourceStaticBrokerConfig},
			"segment.bytes":   {"1073741824", kmsg.ConfigSourceDefaultConfig},
		} {
			c, ok := resp.Configs[name]
			if !ok || c.Value == nil || *c.Value != want.value || c.Source != want.source {
				t.Errorf("create response config %s: %+v (present %v), want %q from %v", name, c, ok, want.value, want.source)
			}
		}
		md := topicMetadata(t, ctx, cl, "defaults")
		if md.ErrorCode != 0 || md.TopicID != resp.ID || len(md.Partitions) != 3 {
			t.Fatalf("metadata: error %d, id %v, %d partitions; want id %v, 3 partitions", md.ErrorCode, md.TopicID, len(md.Partitions), resp.ID)
		}
		for _, p := range md.Partitions {
			if p.ErrorCode != 0 || p.Leader != 1 || p.LeaderEpoch != 0 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
				t.Errorf("partition %d: error %d leader %d epoch %d replicas %v isr %v; want leader 1, epoch 0, replicas and ISR [1]",
					p.Partition, p.ErrorCode, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
			}
		}
	})

	t.Run("CreateTopicsConfigs", func(t *testing.T) {
		resp := create(t, "configured", 2, map[string]*string{
			"retention.ms":      kadm.StringPtr("3600000"),
			"max.message.bytes": kadm.StringPtr("2000000"),
		})
		if resp.NumPartitions != 2 {
			t.Errorf("created %d partitions, want 2", resp.NumPartitions)
		}
		for _, c := range []string{"retention.ms", "max.message.bytes"} {
			if got := resp.Configs[c]; got.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("create response: %s from %v, want %v", c, got.Source, kmsg.ConfigSourceDynamicTopicConfig)
			}
		}
		rc := describeTopic(t, "configured")
		wantConfig(t, rc, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
		wantConfig(t, rc, "max.message.bytes", "2000000", kmsg.ConfigSourceDynamicTopicConfig)
		wantConfig(t, rc, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)

		for name, configs := range map[string]map[string]*string{
			"bad-config-value": {"retention.ms": kadm.StringPtr("soon")},
			"bad-config-min":   {"segment.bytes": kadm.StringPtr("1")},
			"unknown-config":   {"no.such.config": kadm.StringPtr("1")},
		} {
			_, err := adm.CreateTopic(ctx, 1, 1, configs, name)
			wantKerr(t, "create "+name, err, kerr.InvalidConfig)
			unknown(t, name)
		}
	})

	t.Run("CreateTopicsErrors", func(t *testing.T) {
		for _, name := range []string{"bad/name", "has space", "", ".", "..", strings.Repeat("x", 250), "ünicode"} {
			_, err := adm.CreateTopic(ctx, 1, 1, nil, name)
			wantKerr(t, fmt.Sprintf("create %q", name), err, kerr.InvalidTopicException)
		}
		_, err := adm.CreateTopic(ctx, 1, 2, nil, "two-replicas")
		wantKerr(t, "replication factor 2 on one broker", err, kerr.InvalidReplicationFactor)
		unknown(t, "two-replicas")
		_, err = adm.CreateTopic(ctx, 1, 0, nil, "zero-replicas")
		wantKerr(t, "replication factor 0", err, kerr.InvalidReplicationFactor)
		_, err = adm.CreateTopic(ctx, 0, 1, nil, "zero-partitions")
		wantKerr(t, "zero partitions", err, kerr.InvalidPartitions)
		unknown(t, "zero-partitions")

		first := create(t, "duplicate", 2, nil)
		_, err = adm.CreateTopic(ctx, 5, 1, nil, "duplicate")
		wantKerr(t, "create an existing topic", err, kerr.TopicAlreadyExists)
		if md := topicMetadata(t, ctx, cl, "duplicate"); md.TopicID != first.ID || len(md.Partitions) != 2 {
			t.Errorf("after a duplicate create: id %v, %d partitions; want the original id %v and 2 partitions", md.TopicID, len(md.Partitions), first.ID)
		}

		// The same topic twice in one request: both entries fail with
		// INVALID_REQUEST, as in Kafka.
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		for range 2 {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "twice", 1, 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("CreateTopics with a topic twice: %d answers, want 2", len(resp.Topics))
		}
		for _, rt := range resp.Topics {
			if rt.ErrorCode != kerr.InvalidRequest.Code {
				t.Errorf("topic listed twice: error %v, want %v", kerr.ErrorForCode(rt.ErrorCode), kerr.InvalidRequest)
			}
		}
		unknown(t, "twice")
	})

	t.Run("CreateTopicsReplicaAssignment", func(t *testing.T) {
		// A manual assignment, with partitions and replication factor -1.
		send := func(topic string, partitions int32, rf int16, assignment [][]int32) kmsg.CreateTopicsResponseTopic {
			t.Helper()
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 10000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
			for i, replicas := range assignment {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(i), replicas
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("CreateTopics %s: %v", topic, err)
			}
			if len(resp.Topics) != 1 {
				t.Fatalf("CreateTopics %s: %d answers, want 1", topic, len(resp.Topics))
			}
			return resp.Topics[0]
		}
		if got := send("assigned", -1, -1, [][]int32{{1}, {1}}); got.ErrorCode != 0 || got.NumPartitions != 2 || got.ReplicationFactor != 1 {
			t.Errorf("manual assignment [[1] [1]]: error %v, %d partitions, replication factor %d; want 2 and 1",
				kerr.ErrorForCode(got.ErrorCode), got.NumPartitions, got.ReplicationFactor)
		}
		waitPartitionsLed(t, cl, "assigned", 2)
		if md := topicMetadata(t, ctx, cl, "assigned"); len(md.Partitions) != 2 {
			t.Errorf("assigned topic has %d partitions, want 2", len(md.Partitions))
		}
		// Assignments naming an unregistered broker, or a broker twice,
		// are INVALID_REPLICA_ASSIGNMENT in Kafka (ReplicationControlManager),
		// as in samsa's CreatePartitions.
		for name, assignment := range map[string][][]int32{
			"assigned-unknown-broker": {{1}, {2}},
			"assigned-broker-twice":   {{1, 1}},
		} {
			if got := send(name, -1, -1, assignment); got.ErrorCode != kerr.InvalidReplicaAssignment.Code {
				t.Errorf("manual assignment %v: error %v, want %v", assignment, kerr.ErrorForCode(got.ErrorCode), kerr.InvalidReplicaAssignment)
			}
			unknown(t, name)
		}
		// An assignment excludes a partition count and a replication
		// factor: INVALID_REQUEST in Kafka.
		for _, pr := range [][2]int{{2, -1}, {-1, 1}} {
			if got := send("assigned-and-counted", int32(pr[0]), int16(pr[1]), [][]int32{{1}, {1}}); got.ErrorCode != kerr.InvalidRequest.Code {
				t.Errorf("manual assignment with partitions %d, replication factor %d: error %v, want %v",
					pr[0], pr[1], kerr.ErrorForCode(got.ErrorCode), kerr.InvalidRequest)
			}
		}
		unknown(t, "assigned-and-counted")
	})

	t.Run("CreateTopicsValidateOnly", func(t *testing.T) {
		rs, err := adm.ValidateCreateTopics(ctx, 4, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, "validated")
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		r := rs["validated"]
		if r.Err != nil || r.NumPartitions != 4 || r.ReplicationFactor != 1 {
			t.Errorf("validate-only: error %v, %d partitions, replication factor %d; want none, 4, 1", r.Err, r.NumPartitions, r.ReplicationFactor)
		}
		unknown(t, "validated")

		rs, err = adm.ValidateCreateTopics(ctx, 1, 2, nil, "validated")
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		wantKerr(t, "validate-only with replication factor 2", rs["validated"].Err, kerr.InvalidReplicationFactor)

		create(t, "validated-existing", 1, nil)
		rs, err = adm.ValidateCreateTopics(ctx, 1, 1, nil, "validated-existing")
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		wantKerr(t, "validate-only on an existing topic", rs["validated-existing"].Err, kerr.TopicAlreadyExists)

		// Validation reserved nothing: the real creation works.
		if resp := create(t, "validated", 4, nil); resp.NumPartitions != 4 {
			t.Errorf("created %d partitions, want 4", resp.NumPartitions)
		}
	})

	t.Run("DeleteTopics", func(t *testing.T) {
		const topic = "doomed"
		old := create(t, topic, 2, nil)
		var recs []rawRecord
		for i := range 5 {
			recs = append(recs, rawRecord{Key: []byte(fmt.Sprintf("old-%d", i)), Value: []byte("old")})
		}
		if got := produceRaw(t, ctx, cl, topic, 0, buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), recs)); got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("produce: error %d, base offset %d", got.ErrorCode, got.BaseOffset)
		}

		resp, err := adm.DeleteTopic(ctx, topic)
		if err != nil {
			t.Fatalf("delete: %v (%s)", err, resp.ErrMessage)
		}
		if resp.ID != old.ID {
			t.Errorf("delete response topic id %v, want %v", resp.ID, old.ID)
		}
		unknown(t, topic)
		// The broker drops its replicas right after the metadata change.
		WaitFor(t, 10*time.Second, func() error {
			if got := listOffsetRaw(t, ctx, cl, topic, 0, -1, -1); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				return fmt.Errorf("ListOffsets of the deleted topic: error %v offset %d, want %v", kerr.ErrorForCode(got.ErrorCode), got.Offset, kerr.UnknownTopicOrPartition)
			}
			return nil
		})
		_, err = adm.DeleteTopic(ctx, topic)
		wantKerr(t, "delete a deleted topic", err, kerr.UnknownTopicOrPartition)

		// Same name again: a new topic id and an empty log.
		recreated := create(t, topic, 2, nil)
		if recreated.ID == old.ID || recreated.ID == (kadm.TopicID{}) {
			t.Errorf("re-created topic id %v, old id %v: want a new id", recreated.ID, old.ID)
		}
		for p := range int32(2) {
			for _, ts := range []int64{-2, -1} {
				if got := listOffsetRaw(t, ctx, cl, topic, p, ts, -1); got.ErrorCode != 0 || got.Offset != 0 {
					t.Errorf("re-created topic partition %d, ListOffsets %d: offset %d error %d, want 0", p, ts, got.Offset, got.ErrorCode)
				}
			}
		}
		newRec := []rawRecord{{Key: []byte("new"), Value: []byte("new")}}
		if got := produceRaw(t, ctx, cl, topic, 0, buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), newRec)); got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("produce to the re-created topic: error %d, base offset %d; want offset 0", got.ErrorCode, got.BaseOffset)
		}
		if got := consumeKgo(t, ctx, b.Addr, topic, []int32{0}, 1); len(got) != 1 || string(got[0].Key) != "new" || got[0].Offset != 0 {
			t.Errorf("re-created topic holds %d records, first %s@%d; want only the new one at 0", len(got), got[0].Key, got[0].Offset)
		}
		checkEndOffsets(t, ctx, b.Addr, topic, map[int32]int64{0: 1, 1: 0})

		// v6: by topic id; an unknown id is UNKNOWN_TOPIC_ID.
		byID := create(t, "doomed-by-id", 1, nil)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 10000
		for _, id := range [][16]byte{byID.ID, {1, 2, 3}} {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.TopicID = id
			req.Topics = append(req.Topics, rt)
		}
		dresp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DeleteTopics by id: %v", err)
		}
		if dresp.Version < 6 {
			t.Fatalf("DeleteTopics sent as v%d, want v6 (topic ids)", dresp.Version)
		}
		if len(dresp.Topics) != 2 {
			t.Fatalf("DeleteTopics by id: %d answers, want 2", len(dresp.Topics))
		}
		if got := dresp.Topics[0]; got.ErrorCode != 0 || got.Topic == nil || *got.Topic != "doomed-by-id" {
			t.Errorf("delete by id: error %v, topic %v; want no error, topic doomed-by-id", kerr.ErrorForCode(got.ErrorCode), got.Topic)
		}
		if got := dresp.Topics[1]; got.ErrorCode != kerr.UnknownTopicID.Code {
			t.Errorf("delete by an unknown id: error %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.UnknownTopicID)
		}
		unknown(t, "doomed-by-id")
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		const topic = "growing"
		create(t, topic, 2, nil)
		rs, err := adm.UpdatePartitions(ctx, 4, topic)
		if err != nil || rs.Error() != nil {
			t.Fatalf("grow to 4 partitions: %v / %v", err, rs.Error())
		}
		md := topicMetadata(t, ctx, cl, topic)
		if len(md.Partitions) != 4 {
			t.Fatalf("after growing: %d partitions, want 4", len(md.Partitions))
		}
		for i, p := range md.Partitions {
			if p.ErrorCode != 0 || p.Partition != int32(i) || p.Leader != 1 || !slices.Equal(p.Replicas, []int32{1}) {
				t.Errorf("partition %d: error %d leader %d replicas %v; want leader 1, replicas [1]", p.Partition, p.ErrorCode, p.Leader, p.Replicas)
			}
		}
		for _, set := range []int{3, 4} {
			rs, err := adm.UpdatePartitions(ctx, set, topic)
			if err != nil {
				t.Fatalf("set %d partitions: %v", set, err)
			}
			wantKerr(t, fmt.Sprintf("set 4 partitions to %d", set), rs[topic].Err, kerr.InvalidPartitions)
		}
		rs, err = adm.ValidateUpdatePartitions(ctx, 6, topic)
		if err != nil || rs.Error() != nil {
			t.Fatalf("validate growing to 6: %v / %v", err, rs.Error())
		}
		if n := len(topicMetadata(t, ctx, cl, topic).Partitions); n != 4 {
			t.Errorf("after a validate-only grow: %d partitions, want 4", n)
		}
		rs, err = adm.UpdatePartitions(ctx, 5, "no-such-topic")
		if err != nil {
			t.Fatalf("grow an unknown topic: %v", err)
		}
		wantKerr(t, "grow an unknown topic", rs["no-such-topic"].Err, kerr.UnknownTopicOrPartition)

		// The new partitions take writes, from raw requests and from a
		// producer that learns them from metadata.
		waitPartitionsLed(t, cl, topic, 4)
		for _, p := range []int32{2, 3} {
			rec := []rawRecord{{Key: []byte(fmt.Sprintf("raw-%d", p)), Value: []byte("v")}}
			if got := produceRaw(t, ctx, cl, topic, p, buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), rec)); got.ErrorCode != 0 || got.BaseOffset != 0 {
				t.Errorf("produce to new partition %d: error %d, base offset %d; want 0", p, got.ErrorCode, got.BaseOffset)
			}
		}
		prod := newKgoClient(t, b.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		r := &kgo.Record{Topic: topic, Partition: 3, Key: []byte("kgo-3"), Value: []byte("v")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 1 {
			t.Errorf("franz-go produce to new partition 3: offset %d, error %v; want offset 1", r.Offset, err)
		}
		got := consumeKgo(t, ctx, b.Addr, topic, []int32{2, 3}, 3)
		var keys []string
		for _, r := range got {
			keys = append(keys, fmt.Sprintf("%d:%s@%d", r.Partition, r.Key, r.Offset))
		}
		slices.Sort(keys)
		if want := []string{"2:raw-2@0", "3:kgo-3@1", "3:raw-3@0"}; !slices.Equal(keys, want) {
			t.Errorf("new partitions hold %v, want %v", keys, want)
		}
	})

	t.Run("DescribeConfigs", func(t *testing.T) {
		create(t, "described", 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")})
		rc := describeTopic(t, "described")
		wantConfig(t, rc, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
		wantConfig(t, rc, "retention.bytes", "123456789", kmsg.ConfigSourceStaticBrokerConfig)
		wantConfig(t, rc, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
		wantConfig(t, rc, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
		// Synonyms come in precedence order: the override first.
		if syn := config(t, rc, "retention.ms").Synonyms; len(syn) == 0 || syn[0].Key != "retention.ms" ||
			syn[0].Value == nil || *syn[0].Value != "3600000" || syn[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("retention.ms synonyms %+v: want the topic override first", syn)
		}
		if syn := config(t, rc, "retention.bytes").Synonyms; len(syn) == 0 || syn[0].Key != "log.retention.bytes" ||
			syn[0].Value == nil || *syn[0].Value != "123456789" || syn[0].Source != kmsg.ConfigSourceStaticBrokerConfig {
			t.Errorf("retention.bytes synonyms %+v: want log.retention.bytes=123456789 (STATIC_BROKER_CONFIG) first", syn)
		}

		rcs, err := adm.DescribeTopicConfigs(ctx, "no-such-topic")
		if err != nil {
			t.Fatalf("describe an unknown topic: %v", err)
		}
		rc, err = rcs.On("no-such-topic", nil)
		if err != nil {
			t.Fatalf("describe an unknown topic: %v", err)
		}
		wantKerr(t, "describe an unknown topic", rc.Err, kerr.UnknownTopicOrPartition)

		rcs, err = adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatalf("describe broker configs: %v", err)
		}
		rc, err = rcs.On("1", nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe broker 1: %v / %v", err, rc.Err)
		}
		wantConfig(t, rc, "num.partitions", "3", kmsg.ConfigSourceStaticBrokerConfig)
		wantConfig(t, rc, "log.retention.bytes", "123456789", kmsg.ConfigSourceStaticBrokerConfig)
	})

	t.Run("IncrementalAlterConfigs", func(t *testing.T) {
		const topic = "altered"
		create(t, topic, 1, nil)
		alter := func(op kadm.IncrementalOp, name string, value *string) error {
			t.Helper()
			rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: name, Value: value}}, topic)
			if err != nil {
				t.Fatalf("alter %s: %v", name, err)
			}
			r, err := rs.On(topic, nil)
			if err != nil {
				t.Fatalf("alter %s: %v", name, err)
			}
			return r.Err
		}
		if err := alter(kadm.SetConfig, "retention.ms", kadm.StringPtr("1234567")); err != nil {
			t.Fatalf("SET retention.ms: %v", err)
		}
		wantConfig(t, describeTopic(t, topic), "retention.ms", "1234567", kmsg.ConfigSourceDynamicTopicConfig)

		wantKerr(t, "SET retention.ms=abc", alter(kadm.SetConfig, "retention.ms", kadm.StringPtr("abc")), kerr.InvalidConfig)
		wantKerr(t, "SET an unknown config", alter(kadm.SetConfig, "no.such.config", kadm.StringPtr("1")), kerr.InvalidConfig)
		wantKerr(t, "APPEND to a non-list config", alter(kadm.AppendConfig, "retention.ms", kadm.StringPtr("1")), kerr.InvalidConfig)
		wantConfig(t, describeTopic(t, topic), "retention.ms", "1234567", kmsg.ConfigSourceDynamicTopicConfig)

		rs, err := adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("999")}}, topic)
		if err != nil || rs[0].Err != nil {
			t.Fatalf("validate-only SET: %v / %v", err, rs[0].Err)
		}
		wantConfig(t, describeTopic(t, topic), "retention.ms", "1234567", kmsg.ConfigSourceDynamicTopicConfig)

		if err := alter(kadm.DeleteConfig, "retention.ms", nil); err != nil {
			t.Fatalf("DELETE retention.ms: %v", err)
		}
		wantConfig(t, describeTopic(t, topic), "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

		rs, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "no-such-topic")
		if err != nil {
			t.Fatalf("alter an unknown topic: %v", err)
		}
		wantKerr(t, "alter an unknown topic", rs[0].Err, kerr.UnknownTopicOrPartition)

		// The partition applies a change: a small max.message.bytes
		// rejects a larger batch.
		if err := alter(kadm.SetConfig, "max.message.bytes", kadm.StringPtr("200")); err != nil {
			t.Fatalf("SET max.message.bytes: %v", err)
		}
		big := buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Key: []byte("big"), Value: make([]byte, 300)}})
		WaitFor(t, 10*time.Second, func() error {
			if got := produceRaw(t, ctx, cl, topic, 0, big); got.ErrorCode != kerr.MessageTooLarge.Code {
				return fmt.Errorf("300-byte record with max.message.bytes=200: error %v, want %v", kerr.ErrorForCode(got.ErrorCode), kerr.MessageTooLarge)
			}
			return nil
		})
	})

	t.Run("DescribeClusterAndMetadata", func(t *testing.T) {
		_, portStr, _ := net.SplitHostPort(b.Addr)
		port, _ := strconv.Atoi(portStr)

		req := kmsg.NewPtrDescribeClusterRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("DescribeCluster: %v", err)
		}
		if resp.ErrorCode != 0 || resp.ClusterID == "" || resp.ControllerID != 1 || len(resp.Brokers) != 1 {
			t.Fatalf("DescribeCluster: error %d, cluster %q, controller %d, %d brokers; want a cluster id, controller 1, one broker",
				resp.ErrorCode, resp.ClusterID, resp.ControllerID, len(resp.Brokers))
		}
		if br := resp.Brokers[0]; br.NodeID != 1 || br.Host != "127.0.0.1" || br.Port != int32(port) || br.Rack != nil {
			t.Errorf("DescribeCluster broker %d at %s:%d rack %v; want 1 at %s, no rack", br.NodeID, br.Host, br.Port, br.Rack, b.Addr)
		}

		create(t, "listed", 1, nil)
		md := metadataRaw(t, ctx, cl, false)
		if md.ClusterID == nil || *md.ClusterID != resp.ClusterID || md.ControllerID != 1 || len(md.Brokers) != 1 {
			t.Fatalf("Metadata: cluster %v, controller %d, %d brokers; want cluster %q, controller 1, one broker",
				md.ClusterID, md.ControllerID, len(md.Brokers), resp.ClusterID)
		}
		if br := md.Brokers[0]; br.NodeID != 1 || br.Host != "127.0.0.1" || br.Port != int32(port) {
			t.Errorf("Metadata broker %d at %s:%d; want 1 at %s", br.NodeID, br.Host, br.Port, b.Addr)
		}
		// All topics (a null list) includes the one just created.
		var names []string
		for _, rt := range md.Topics {
			names = append(names, *rt.Topic)
		}
		if !slices.Contains(names, "listed") {
			t.Errorf("Metadata for all topics lists %v, want it to include %q", names, "listed")
		}

		bm, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatalf("kadm BrokerMetadata: %v", err)
		}
		if bm.Cluster != resp.ClusterID || bm.Controller != 1 || len(bm.Brokers) != 1 || bm.Brokers[0].NodeID != 1 ||
			bm.Brokers[0].Host != "127.0.0.1" || bm.Brokers[0].Port != int32(port) {
			t.Errorf("kadm BrokerMetadata %+v: want cluster %q, controller 1, broker 1 at %s", bm, resp.ClusterID, b.Addr)
		}
	})

	t.Run("AutoCreateEnabled", func(t *testing.T) {
		// Only when the request allows it (v4+).
		if rt := onlyTopic(t, metadataRaw(t, ctx, cl, false, "auto-not-allowed")); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("metadata without auto-creation: error %v, want %v", kerr.ErrorForCode(rt.ErrorCode), kerr.UnknownTopicOrPartition)
		}
		unknown(t, "auto-not-allowed")

		// Kafka's AutoTopicCreationManager answers the request that creates
		// a topic with LEADER_NOT_AVAILABLE and no partitions (kafka-go's
		// suite relies on it); a later request describes the whole topic.
		if rt := onlyTopic(t, metadataRaw(t, ctx, cl, true, "auto-created")); rt.ErrorCode != kerr.LeaderNotAvailable.Code || len(rt.Partitions) != 0 {
			t.Fatalf("auto-creating metadata: error %v, %d partitions; want LEADER_NOT_AVAILABLE and none",
				kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions))
		}
		WaitFor(t, 10*time.Second, func() error {
			rt := topicMetadata(t, ctx, cl, "auto-created")
			switch {
			case rt.ErrorCode == kerr.UnknownTopicOrPartition.Code:
				return errors.New("auto-created topic not served yet")
			case rt.ErrorCode != 0 || len(rt.Partitions) != 3 || rt.TopicID == ([16]byte{}):
				t.Fatalf("auto-created topic: error %v, %d partitions, id %v; want no error, 3 partitions (num.partitions), an id",
					kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions), rt.TopicID)
			}
			return nil
		})
		if rt := onlyTopic(t, metadataRaw(t, ctx, cl, true, "bad/name")); rt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("auto-creating an invalid name: error %v, want %v", kerr.ErrorForCode(rt.ErrorCode), kerr.InvalidTopicException)
		}

		// A client that allows auto-creation can produce to a new topic.
		// The first Metadata answers LEADER_NOT_AVAILABLE; a short
		// MetadataMinAge keeps franz-go's retry from waiting 5s.
		prod := newKgoClient(t, b.Addr, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto-by-producer"),
			kgo.MetadataMinAge(100*time.Millisecond))
		r := &kgo.Record{Key: []byte("k"), Value: []byte("v")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 0 {
			t.Fatalf("produce to an auto-created topic: offset %d, error %v", r.Offset, err)
		}
		if rt := topicMetadata(t, ctx, cl, "auto-by-producer"); rt.ErrorCode != 0 || len(rt.Partitions) != 3 {
			t.Errorf("topic auto-created by the producer: error %d, %d partitions; want 3", rt.ErrorCode, len(rt.Partitions))
		}
	})
}

// onlyTopic returns the one topic of a Metadata response.
func onlyTopic(t *testing.T, md *kmsg.MetadataResponse) kmsg.MetadataResponseTopic {
	t.Helper()
	if len(md.Topics) != 1 {
		t.Fatalf("Metadata answered %d topics, want 1", len(md.Topics))
	}
	return md.Topics[0]
}

// TestAdminAutoCreateDisabled checks that auto.create.topics.enable=false
// keeps Metadata from creating topics even when the request allows it.
func TestAdminAutoCreateDisabled(t *testing.T) {
	b := StartBroker(t, func(c *broker.Config) {
		if err := c.Set("auto.create.topics.enable", "false"); err != nil {
			t.Fatalf("set auto.create.topics.enable: %v", err)
		}
	})
	ctx := testContext(t, 30*time.Second)
	cl := newKgoClient(t, b.Addr)
	for range 2 { // the first request must not have created it either
		rt := onlyTopic(t, metadataRaw(t, ctx, cl, true, "not-auto-created"))
		if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(rt.Partitions) != 0 {
			t.Fatalf("metadata allowing auto-creation on a broker that disables it: error %v, %d partitions; want UNKNOWN_TOPIC_OR_PARTITION",
				kerr.ErrorForCode(rt.ErrorCode), len(rt.Partitions))
		}
	}
	// Explicit creation still works.
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "explicit"); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if rt := topicMetadata(t, ctx, cl, "explicit"); rt.ErrorCode != 0 || len(rt.Partitions) != 1 {
		t.Errorf("explicit topic: error %d, %d partitions", rt.ErrorCode, len(rt.Partitions))
	}
}
