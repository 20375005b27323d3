package main

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestPrintClusterDescription(t *testing.T) {
	tests := []struct {
		name string
		in   clusterDescription
		want string
	}{
		{
			name: "healthy",
			in: clusterDescription{ClusterID: "c4GGwoXESN-R2HrekjPmcQ", Controller: 2, Partitions: 12, Brokers: []brokerDescription{
				{ID: 1, Addr: "127.0.0.1:9092", Alive: true, Leaders: 4, Replicas: 12},
				{ID: 2, Addr: "127.0.0.1:9093", Alive: true, Leaders: 4, Replicas: 12},
				{ID: 3, Addr: "127.0.0.1:9094", Alive: true, Leaders: 4, Replicas: 12},
			}},
			want: "Cluster: c4GGwoXESN-R2HrekjPmcQ  Controller: 2  Brokers: 3\n" +
				"ID  ADDRESS         RACK  ALIVE  LEADERS  REPLICAS\n" +
				"1   127.0.0.1:9092  -     yes    4        12\n" +
				"2   127.0.0.1:9093  -     yes    4        12\n" +
				"3   127.0.0.1:9094  -     yes    4        12\n" +
				"Partitions: 12  Offline: 0  Under-replicated: 0\n",
		},
		{
			name: "a dead broker has no address",
			in: clusterDescription{ClusterID: "x", Controller: 1, Partitions: 3, Offline: 1, UnderReplicated: 2, Brokers: []brokerDescription{
				{ID: 1, Addr: "broker-1.example.com:9092", Rack: "eu-west-1a", Alive: true, Leaders: 2, Replicas: 3},
				{ID: 10, Rack: "", Alive: false, Leaders: 0, Replicas: 2},
			}},
			want: "Cluster: x  Controller: 1  Brokers: 2 (1 not alive)\n" +
				"ID  ADDRESS                    RACK        ALIVE  LEADERS  REPLICAS\n" +
				"1   broker-1.example.com:9092  eu-west-1a  yes    2        3\n" +
				"10  -                          -           no     0        2\n" +
				"Partitions: 3  Offline: 1  Under-replicated: 2\n",
		},
		{
			name: "no controller, no cluster id, no brokers",
			in:   clusterDescription{Controller: -1},
			want: "Cluster: -  Controller: none  Brokers: 0\n" +
				"ID  ADDRESS  RACK  ALIVE  LEADERS  REPLICAS\n" +
				"Partitions: 0  Offline: 0  Under-replicated: 0\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := printClusterDescription(&buf, tt.in); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestBuildClusterDescription(t *testing.T) {
	rack := "r1"
	part := func(topic string, p, leader int32, replicas, isr []int32) kadm.PartitionDetail {
		return kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, Replicas: replicas, ISR: isr}
	}
	tests := []struct {
		name string
		in   kadm.Metadata
		want clusterDescription
	}{
		{
			name: "leaders and replicas counted per broker",
			in: kadm.Metadata{
				Cluster:    "id",
				Controller: 2,
				Brokers: kadm.BrokerDetails{
					{NodeID: 2, Host: "h2", Port: 9092},
					{NodeID: 1, Host: "h1", Port: 9092, Rack: &rack},
				},
				Topics: kadm.TopicDetails{
					"a": {Topic: "a", Partitions: kadm.PartitionDetails{
						0: part("a", 0, 1, []int32{1, 2}, []int32{1, 2}),
						1: part("a", 1, 2, []int32{2, 1}, []int32{2, 1}),
						2: part("a", 2, 1, []int32{1}, []int32{1}),
					}},
					"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true, Partitions: kadm.PartitionDetails{
						0: part("__consumer_offsets", 0, 2, []int32{2}, []int32{2}),
					}},
				},
			},
			want: clusterDescription{ClusterID: "id", Controller: 2, Partitions: 4, Brokers: []brokerDescription{
				{ID: 1, Addr: "h1:9092", Rack: "r1", Alive: true, Leaders: 2, Replicas: 3},
				{ID: 2, Addr: "h2:9092", Alive: true, Leaders: 2, Replicas: 3},
			}},
		},
		{
			name: "a replica that is not a registered broker is listed as not alive",
			in: kadm.Metadata{
				Cluster:    "id",
				Controller: 1,
				Brokers:    kadm.BrokerDetails{{NodeID: 1, Host: "::1", Port: 9092}, {NodeID: 4, Host: "h4", Port: 1}},
				Topics: kadm.TopicDetails{
					"t": {Topic: "t", Partitions: kadm.PartitionDetails{
						// led by 1 after 3 died: under-replicated
						0: part("t", 0, 1, []int32{3, 1}, []int32{1}),
						// 3 was the only replica: offline
						1: part("t", 1, -1, []int32{3}, []int32{3}),
						// a leader id that is not registered is offline too
						2: part("t", 2, 3, []int32{3, 1}, []int32{3, 1}),
					}},
				},
			},
			want: clusterDescription{ClusterID: "id", Controller: 1, Partitions: 3, Offline: 2, UnderReplicated: 1, Brokers: []brokerDescription{
				{ID: 1, Addr: "[::1]:9092", Alive: true, Leaders: 1, Replicas: 2},
				{ID: 3, Leaders: 1, Replicas: 3},
				{ID: 4, Addr: "h4:1", Alive: true},
			}},
		},
		{
			name: "empty",
			in:   kadm.Metadata{Controller: -1},
			want: clusterDescription{Controller: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := buildClusterDescription(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
