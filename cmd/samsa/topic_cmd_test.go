package main

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeFixture: brokers 1 and 2 are live, broker 3 is gone.
func describeFixture() *fakeCluster {
	return &fakeCluster{
		liveBrokers: []int32{1, 2},
		topics: []fakeTopic{
			{
				name: "orders",
				id:   [16]byte{0x72, 0xca, 0x02, 0x7b, 0x81, 0x66, 0x4f, 0x5f, 0xaa, 0xfa, 0x3d, 0x09, 0x34, 0x79, 0x55, 0x80},
				parts: []partitionDescription{
					{Partition: 2, Leader: -1, Replicas: []int32{3, 2}, ISR: []int32{3}, Offline: []int32{3}},
					{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
					{Partition: 1, Leader: 1, Replicas: []int32{2, 1}, ISR: []int32{1}},
				},
				configs: []kadmConfig{
					{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig},
					{"retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig},
					{"min.insync.replicas", "2", kmsg.ConfigSourceDynamicTopicConfig},
				},
			},
			{
				name:  "__consumer_offsets",
				id:    [16]byte{1},
				parts: []partitionDescription{{Partition: 0, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}}},
				configs: []kadmConfig{
					{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig},
				},
				internal: true,
			},
			{
				// reports no min.insync.replicas at all
				name:  "bare",
				parts: []partitionDescription{{Partition: 0, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}}},
			},
		},
	}
}

func TestTopicDescribeCommand(t *testing.T) {
	cluster := describeFixture()
	var b *fakeBroker
	b = startFakeBroker(t, cluster.handlers(&b))

	const (
		ordersHeader = "Topic: orders\tTopicId: csoCe4FmT1-q-j0JNHlVgA\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: min.insync.replicas=2,retention.ms=1000\n"
		orders0      = "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
		orders1      = "\tTopic: orders\tPartition: 1\tLeader: 1\tReplicas: 2,1\tIsr: 1\n"
		orders2      = "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,2\tIsr: 3\tOffline: 3\n"
		offsetsAll   = "Topic: __consumer_offsets\tTopicId: AQAAAAAAAAAAAAAAAAAAAA\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n" +
			"\tTopic: __consumer_offsets\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\n"
		bareAll = "Topic: bare\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n" +
			"\tTopic: bare\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\n"
	)
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{
			name: "one topic",
			args: []string{"topic", "describe", "orders"},
			want: ordersHeader + orders0 + orders1 + orders2 +
				"Partitions: 1 healthy, 2 under-replicated, 1 offline, 1 led by a non-preferred replica\n",
		},
		{
			name: "all topics sorted, internal included as in Kafka",
			args: []string{"topic", "describe", "--summary=false"},
			want: offsetsAll + bareAll + ordersHeader + orders0 + orders1 + orders2,
		},
		{
			name: "exclude internal",
			args: []string{"topic", "describe", "--exclude-internal", "--summary=false"},
			want: bareAll + ordersHeader + orders0 + orders1 + orders2,
		},
		{"under-replicated", []string{"topic", "describe", "--under-replicated-partitions", "--summary=false"}, orders1 + orders2, ""},
		{"unavailable", []string{"topic", "describe", "--unavailable-partitions", "--summary=false"}, orders2, ""},
		{"under-min-isr", []string{"topic", "describe", "orders", "--under-min-isr-partitions", "--summary=false"}, orders1 + orders2, ""},
		{"at-min-isr", []string{"topic", "describe", "orders", "__consumer_offsets", "--at-min-isr-partitions", "--summary=false"},
			"\tTopic: __consumer_offsets\tPartition: 0\tLeader: 2\tReplicas: 2\tIsr: 2\n" + orders0, ""},
		{"overrides", []string{"topic", "describe", "--topics-with-overrides", "--summary=false"}, ordersHeader, ""},
		{"unknown topic", []string{"topic", "describe", "orders", "nosuch"}, "", `topic "nosuch" does not exist`},
		{"min-isr filter needs min.insync.replicas", []string{"topic", "describe", "bare", "--under-min-isr-partitions"}, "", "did not report min.insync.replicas"},
		{"list", []string{"topic", "list"}, "__consumer_offsets\nbare\norders\n", ""},
		{"list without internal", []string{"topic", "list", "--exclude-internal"}, "bare\norders\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runCLI(t, "", append([]string{"-b", b.addr(), "--timeout", "10s"}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", out, tt.want)
			}
		})
	}
}

func TestTopicWriteCommands(t *testing.T) {
	cluster := &fakeCluster{liveBrokers: []int32{1}}
	var b *fakeBroker
	handlers := cluster.handlers(&b)
	handlers[kmsg.CreateTopics.Int16()] = func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.CreateTopicsRequest)
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic = rt.Topic
			if rt.Topic == "exists" {
				t.ErrorCode = 36 // TOPIC_ALREADY_EXISTS
				t.ErrorMessage = kmsg.StringPtr("Topic 'exists' already exists.")
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
	handlers[kmsg.DeleteTopics.Int16()] = func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.DeleteTopicsRequest)
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic = rt.Topic
			if *rt.Topic == "nosuch" {
				t.ErrorCode = 3
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
	handlers[kmsg.IncrementalAlterConfigs.Int16()] = func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.IncrementalAlterConfigsRequest)
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range req.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
			resp.Resources = append(resp.Resources, res)
		}
		return resp
	}
	handlers[kmsg.CreatePartitions.Int16()] = func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.CreatePartitionsRequest)
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic = rt.Topic
			if rt.Count < 3 {
				t.ErrorCode = 37 // INVALID_PARTITIONS
				t.ErrorMessage = kmsg.StringPtr("Topic currently has 3 partitions")
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}
	b = startFakeBroker(t, handlers)
	cli := func(args ...string) (string, error) {
		out, _, err := runCLI(t, "", append([]string{"-b", b.addr(), "--timeout", "10s"}, args...)...)
		return out, err
	}

	t.Run("create", func(t *testing.T) {
		out, err := cli("topic", "create", "t1", "--partitions", "3", "--replication-factor", "2", "--config", "retention.ms=1000", "--config", "cleanup.policy=delete")
		if err != nil {
			t.Fatal(err)
		}
		if want := "Created topic t1.\n"; out != want {
			t.Errorf("stdout %q, want %q", out, want)
		}
		reqs := b.got(kmsg.CreateTopics.Int16())
		rt := reqs[len(reqs)-1].(*kmsg.CreateTopicsRequest).Topics[0]
		configs := map[string]string{}
		for _, c := range rt.Configs {
			configs[c.Name] = *c.Value
		}
		if rt.Topic != "t1" || rt.NumPartitions != 3 || rt.ReplicationFactor != 2 ||
			!reflect.DeepEqual(configs, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}) {
			t.Errorf("request: topic %q partitions %d rf %d configs %v", rt.Topic, rt.NumPartitions, rt.ReplicationFactor, configs)
		}
	})
	t.Run("create with broker defaults", func(t *testing.T) {
		if _, err := cli("topic", "create", "t2"); err != nil {
			t.Fatal(err)
		}
		reqs := b.got(kmsg.CreateTopics.Int16())
		rt := reqs[len(reqs)-1].(*kmsg.CreateTopicsRequest).Topics[0]
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			t.Errorf("partitions %d rf %d, want -1 -1 (broker defaults)", rt.NumPartitions, rt.ReplicationFactor)
		}
	})
	t.Run("create existing", func(t *testing.T) {
		_, err := cli("topic", "create", "exists")
		if err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") || !strings.Contains(err.Error(), "already exists.") {
			t.Errorf("err = %v, want TOPIC_ALREADY_EXISTS with the broker's message", err)
		}
		out, err := cli("topic", "create", "exists", "--if-not-exists")
		if err != nil || out != "" {
			t.Errorf("--if-not-exists: out %q err %v, want silence", out, err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		out, err := cli("topic", "delete", "b", "a", "nosuch")
		if err == nil || !strings.Contains(err.Error(), `deleting topic "nosuch"`) {
			t.Errorf("err = %v, want the nosuch failure", err)
		}
		if want := "Deleted topic a.\nDeleted topic b.\n"; out != want {
			t.Errorf("stdout %q, want %q", out, want)
		}
		out, err = cli("topic", "delete", "a", "nosuch", "--if-exists")
		if err != nil || out != "Deleted topic a.\n" {
			t.Errorf("--if-exists: out %q err %v", out, err)
		}
	})
	t.Run("alter", func(t *testing.T) {
		out, err := cli("topic", "alter", "t1", "--config", "retention.ms=5", "--delete-config", "cleanup.policy", "--partitions", "6")
		if err != nil {
			t.Fatal(err)
		}
		if want := "Altered configs of topic t1.\nTopic t1 now has 6 partitions.\n"; out != want {
			t.Errorf("stdout %q, want %q", out, want)
		}
		reqs := b.got(kmsg.IncrementalAlterConfigs.Int16())
		res := reqs[len(reqs)-1].(*kmsg.IncrementalAlterConfigsRequest).Resources[0]
		var ops []string
		for _, c := range res.Configs {
			v := "<nil>"
			if c.Value != nil {
				v = *c.Value
			}
			ops = append(ops, c.Op.String()+" "+c.Name+" "+v)
		}
		sort.Strings(ops)
		wantOps := []string{"DELETE cleanup.policy <nil>", "SET retention.ms 5"}
		if res.ResourceName != "t1" || res.ResourceType != kmsg.ConfigResourceTypeTopic || !reflect.DeepEqual(ops, wantOps) {
			t.Errorf("alter request: %v %q %q, want topic t1 %q", res.ResourceType, res.ResourceName, ops, wantOps)
		}
		preqs := b.got(kmsg.CreatePartitions.Int16())
		pt := preqs[len(preqs)-1].(*kmsg.CreatePartitionsRequest).Topics[0]
		if pt.Topic != "t1" || pt.Count != 6 {
			t.Errorf("create partitions request: %q count %d, want t1 6", pt.Topic, pt.Count)
		}
	})
	t.Run("alter partitions refused", func(t *testing.T) {
		_, err := cli("topic", "alter", "t1", "--partitions", "2")
		if err == nil || !strings.Contains(err.Error(), "INVALID_PARTITIONS") {
			t.Errorf("err = %v, want INVALID_PARTITIONS", err)
		}
	})
}
