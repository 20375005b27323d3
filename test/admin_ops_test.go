package test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeleteRecordsReplicated: DeleteRecords through franz-go's admin
// client on three brokers at RF 3. The answer's low watermark is the
// requested offset (the high watermark for -1), consumers start there, and
// the deletion reached the followers before the answer: after the
// partition's leader stops, the new leader's log starts there too. Bad
// requests get Kafka's errors.
func TestDeleteRecordsReplicated(t *testing.T) {
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	const topic, perPartition = "purged", 100
	if _, err := adm.CreateTopic(ctx, 2, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Several batches per partition, so that the deletion falls inside
	// the log rather than at a batch's edge only.
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(10))
	defer cl.Close()
	for i := range perPartition {
		for p := range int32(2) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: -1})
	resps, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: 40, 1: perPartition} {
		r, ok := resps.Lookup(topic, p)
		if !ok || r.Err != nil || r.LowWatermark != want {
			t.Errorf("partition %d: %+v (found %v), want low watermark %d", p, r, ok, want)
		}
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 40 {
		t.Errorf("start offset of partition 0 = %+v, want 40", o)
	}
	consumer := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	defer consumer.Close()
	fs := consumer.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 40 || string(recs[0].Value) != "0-40" {
		t.Fatalf("first record read from the start: %+v, want offset 40, value 0-40", recs)
	}

	// The followers had deleted too: the next leader's log starts at 40.
	md, err := c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	leader := int32(-1)
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			for _, mp := range mt.Partitions {
				if mp.Partition == 0 {
					leader = mp.Leader
				}
			}
		}
	}
	if leader < 1 {
		t.Fatalf("no leader for partition 0 in %+v", md.Topics)
	}
	c.Stop(leader)
	WaitFor(t, 60*time.Second, func() error {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		o, ok := starts.Lookup(topic, 0)
		switch {
		case !ok || o.Err != nil:
			return fmt.Errorf("partition 0 start offset: %+v", o)
		case o.Offset != 40:
			return fmt.Errorf("start offset %d on the new leader, want 40", o.Offset)
		}
		return nil
	})
	c.Restart(leader)

	// Bad requests. Looking for a group's coordinator creates
	// __consumer_offsets, as in Kafka.
	WaitFor(t, 30*time.Second, func() error {
		resp := adm.FindGroupCoordinators(ctx, "purger")
		for _, r := range resp {
			return r.Err
		}
		return errors.New("no FindCoordinator answer")
	})
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"cleanup.policy": &compact}, "purged-compacted"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic  string
		offset int64
		want   error
	}{
		{topic, 1000, kerr.OffsetOutOfRange},
		{topic, -2, kerr.OffsetOutOfRange},
		{"purged-compacted", -1, kerr.PolicyViolation},
		{"__consumer_offsets", -1, kerr.InvalidTopicException},
	} {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: tc.topic, Partition: 0, At: tc.offset})
		var r kadm.DeleteRecordsResponse
		WaitFor(t, 30*time.Second, func() error {
			resps, err := adm.DeleteRecords(ctx, os)
			if err != nil {
				return err
			}
			r, _ = resps.Lookup(tc.topic, 0)
			if errors.Is(r.Err, kerr.NotLeaderForPartition) || errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return r.Err // the restarted broker's leaderships settle
			}
			return nil
		})
		if !errors.Is(r.Err, tc.want) {
			t.Errorf("DeleteRecords %s at %d: %v, want %v", tc.topic, tc.offset, r.Err, tc.want)
		}
	}
}

// TestDescribeLogDirs: franz-go's DescribeAllLogDirs lists, for each
// broker, its one log directory with the sizes of the replicas it hosts
// and the volume's total and usable bytes.
func TestDescribeLogDirs(t *testing.T) {
	c := StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := c.Admin()
	const topic = "dirs"
	if _, err := adm.CreateTopic(ctx, 2, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	for i := range 50 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "value-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	want := kadm.TopicsSet{}
	want.Add(topic, 0, 1)
	var all kadm.DescribedAllLogDirs
	// The followers' sizes grow as they fetch: wait until every replica
	// (2 partitions at RF 2) has data.
	WaitFor(t, 30*time.Second, func() error {
		var err error
		all, err = adm.DescribeAllLogDirs(ctx, want)
		if err != nil {
			return err
		}
		replicas := 0
		for broker, dirs := range all {
			if len(dirs) != 1 {
				return fmt.Errorf("broker %d: %d log dirs, want 1", broker, len(dirs))
			}
			for _, d := range dirs {
				if d.Err != nil {
					return fmt.Errorf("broker %d: %v", broker, d.Err)
				}
				if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
					return fmt.Errorf("broker %d: total %d, usable %d bytes", broker, d.TotalBytes, d.UsableBytes)
				}
				for _, ps := range d.Topics {
					for _, p := range ps {
						if p.Topic != topic {
							return fmt.Errorf("broker %d lists %s-%d, which was not asked for", broker, p.Topic, p.Partition)
						}
						if p.Size > 0 {
							replicas++
						}
					}
				}
			}
		}
		if len(all) != 3 || replicas != 4 {
			return fmt.Errorf("%d brokers answered, %d replicas with data; want 3 and 4", len(all), replicas)
		}
		return nil
	})
}
