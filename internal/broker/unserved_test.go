package broker

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/protocol"
)

// TestUnservedCoversKafka4 checks the table of unserved APIs against
// franz-go's record of what Kafka 4.x brokers serve: every key of the
// newest 4.x release is served or unserved, never both, and an unserved
// key's highest version is Kafka's.
func TestUnservedCoversKafka4(t *testing.T) {
	newest := kversion.V4_4_0()
	newest.EachMaxKeyVersion(func(key, max int16) {
		_, served := apis[key]
		u, isUnserved := unserved[key]
		switch {
		case served && isUnserved:
			t.Errorf("key %d (%s) is both served and unserved", key, kmsg.NameForKey(key))
		case !served && !isUnserved:
			t.Errorf("key %d (%s): Kafka 4.4 brokers serve it, samsa neither serves it nor answers it", key, kmsg.NameForKey(key))
		case isUnserved && u.kafkaMax != max:
			t.Errorf("key %d (%s): kafkaMax %d, Kafka 4.4 serves up to %d", key, kmsg.NameForKey(key), u.kafkaMax, max)
		}
	})
	for key, u := range unserved {
		if !newest.HasKey(key) {
			t.Errorf("key %d (%s) is unserved but Kafka 4.4 brokers do not serve it", key, kmsg.NameForKey(key))
		}
		if kmsg.RequestForKey(key) == nil {
			t.Errorf("key %d: kmsg does not know it", key)
		}
		if u.kafkaMin > u.kafkaMax || u.code == 0 {
			t.Errorf("key %d: bad entry %+v", key, u)
		}
	}
}

// TestUnservedNotAdvertised: ApiVersions lists only the served APIs, so a
// client that negotiates never sends an unserved one.
func TestUnservedNotAdvertised(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	resp := (&Broker{}).handleApiVersions(context.Background(), &protocol.Request{Key: 18, Version: 3, Body: req}).Body.(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if _, ok := unserved[k.ApiKey]; ok {
			t.Errorf("ApiVersions advertises unserved key %d", k.ApiKey)
		}
	}
	for key := range unserved {
		if _, _, ok := apiVersionRange(key); !ok {
			t.Errorf("key %d is unserved but the protocol server would not decode it", key)
		}
	}
}

// TestUnservedMirrors checks, for requests whose responses list items,
// that the response lists the request's items, each with the error.
func TestUnservedMirrors(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		version int16
		req     kmsg.Request
		want    kmsg.Response
	}{{
		name: "AlterPartitionReassignments", version: 0,
		req: &kmsg.AlterPartitionAssignmentsRequest{Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{
			{Topic: "a", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}, {Partition: 3}}},
		}},
		want: &kmsg.AlterPartitionAssignmentsResponse{ErrorCode: 35, ErrorMessage: str("samsa does not serve AlterPartitionAssignments"),
			Topics: []kmsg.AlterPartitionAssignmentsResponseTopic{
				{Topic: "a", Partitions: []kmsg.AlterPartitionAssignmentsResponseTopicPartition{
					{Partition: 0, ErrorCode: 35, ErrorMessage: str("samsa does not serve AlterPartitionAssignments")},
					{Partition: 3, ErrorCode: 35, ErrorMessage: str("samsa does not serve AlterPartitionAssignments")}}},
			}},
	}, {
		name: "AlterReplicaLogDirs flattens the dirs", version: 1,
		req: &kmsg.AlterReplicaLogDirsRequest{Dirs: []kmsg.AlterReplicaLogDirsRequestDir{
			{Dir: "/a", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t", Partitions: []int32{1, 2}}}},
			{Dir: "/b", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "u", Partitions: []int32{0}}}},
		}},
		want: &kmsg.AlterReplicaLogDirsResponse{Topics: []kmsg.AlterReplicaLogDirsResponseTopic{
			{Topic: "t", Partitions: []kmsg.AlterReplicaLogDirsResponseTopicPartition{{Partition: 1, ErrorCode: 35}, {Partition: 2, ErrorCode: 35}}},
			{Topic: "u", Partitions: []kmsg.AlterReplicaLogDirsResponseTopicPartition{{Partition: 0, ErrorCode: 35}}},
		}},
	}, {
		name: "ConsumerGroupDescribe lists the groups", version: 0,
		req: &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g1", "g2"}},
		want: &kmsg.ConsumerGroupDescribeResponse{Groups: []kmsg.ConsumerGroupDescribeResponseGroup{
			{Group: "g1", ErrorCode: 35, ErrorMessage: str("samsa does not serve ConsumerGroupDescribe"), AuthorizedOperations: math.MinInt32},
			{Group: "g2", ErrorCode: 35, ErrorMessage: str("samsa does not serve ConsumerGroupDescribe"), AuthorizedOperations: math.MinInt32},
		}},
	}, {
		name: "DescribeTopicPartitions", version: 0,
		req: &kmsg.DescribeTopicPartitionsRequest{Topics: []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}},
		want: &kmsg.DescribeTopicPartitionsResponse{Topics: []kmsg.DescribeTopicPartitionsResponseTopic{
			{Topic: str("t"), ErrorCode: 35, AuthorizedOperations: math.MinInt32},
		}},
	}, {
		name: "ListPartitionReassignments lists nothing", version: 0,
		req:  &kmsg.ListPartitionReassignmentsRequest{Topics: []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: "t", Partitions: []int32{0}}}},
		want: &kmsg.ListPartitionReassignmentsResponse{ErrorCode: 35, ErrorMessage: str("samsa does not serve ListPartitionReassignments")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.SetVersion(tt.version)
			tt.want.SetVersion(tt.version)
			got := unservedResponse(tt.req, unserved[tt.req.Key()])
			// Compare what goes on the wire, so that fields the version
			// does not carry do not matter.
			if g, w := got.AppendTo(nil), tt.want.AppendTo(nil); !slices.Equal(g, w) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
