package test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

// TestClientQuotasAdmin: franz-go's admin AlterClientQuotas and
// DescribeClientQuotas against one broker: quotas set, described by exact
// name, default and any-name filters with and without Strict, removed;
// invalid entities, keys and values refused with INVALID_REQUEST.
func TestClientQuotasAdmin(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	set := func(entity kadm.ClientQuotaEntity, ops ...kadm.AlterClientQuotaOp) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
		if err != nil {
			return err
		}
		return res[0].Err
	}
	// Components in the order the broker answers them: by type.
	alice := kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("app")}, {Type: "user", Name: strp("alice")}}
	defUser := kadm.ClientQuotaEntity{{Type: "user"}}
	client := kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("app")}}
	for _, e := range []struct {
		entity kadm.ClientQuotaEntity
		op     kadm.AlterClientQuotaOp
	}{
		{alice, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 2048}},
		{defUser, kadm.AlterClientQuotaOp{Key: "consumer_byte_rate", Value: 4096}},
		{client, kadm.AlterClientQuotaOp{Key: "request_percentage", Value: 12.5}},
	} {
		if err := set(e.entity, e.op); err != nil {
			t.Fatalf("set %v %v: %v", e.entity, e.op, err)
		}
	}
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) map[string]kadm.ClientQuotaValues {
		t.Helper()
		qs, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe %v: %v", comps, err)
		}
		out := map[string]kadm.ClientQuotaValues{}
		for _, q := range qs {
			out[q.Entity.String()] = q.Values
		}
		return out
	}
	exactApp := kadm.DescribeClientQuotaComponent{Type: "client-id", MatchName: strp("app"), MatchType: kmsg.QuotasMatchTypeExact}
	if got := describe(false, exactApp); len(got) != 2 || got[alice.String()] == nil || got[client.String()] == nil {
		t.Errorf("client-id=app, not strict: %v; want alice's and the client's", got)
	}
	if got := describe(true, exactApp); len(got) != 1 || len(got[client.String()]) != 1 || got[client.String()][0].Value != 12.5 {
		t.Errorf("client-id=app, strict: %v; want the client's request_percentage 12.5 alone", got)
	}
	if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}); len(got) != 1 || got[defUser.String()] == nil {
		t.Errorf("default user: %v", got)
	}
	if got := describe(false, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeAny}); len(got) != 2 {
		t.Errorf("any user: %v; want alice's and the default user's", got)
	}
	if got := describe(false); len(got) != 3 {
		t.Errorf("no filter: %v; want all three", got)
	}
	if err := set(client, kadm.AlterClientQuotaOp{Key: "request_percentage", Remove: true}); err != nil {
		t.Fatal(err)
	}
	if got := describe(true, exactApp); len(got) != 0 {
		t.Errorf("after removing its only quota the client entity still has %v", got)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{exactApp, exactApp}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("a filter naming client-id twice: %v, want INVALID_REQUEST", err)
	}

	for _, bad := range []struct {
		name   string
		entity kadm.ClientQuotaEntity
		op     kadm.AlterClientQuotaOp
	}{
		{"unknown key", client, kadm.AlterClientQuotaOp{Key: "producer_rate", Value: 1}},
		{"negative value", client, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: -1}},
		{"fractional byte rate", client, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1.5}},
		{"ip with a user", kadm.ClientQuotaEntity{{Type: "ip", Name: strp("10.0.0.1")}, {Type: "user", Name: strp("bob")}}, kadm.AlterClientQuotaOp{Key: "connection_creation_rate", Value: 1}},
		{"byte rate on an ip", kadm.ClientQuotaEntity{{Type: "ip", Name: strp("10.0.0.1")}}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}},
		{"empty name", kadm.ClientQuotaEntity{{Type: "user", Name: strp("")}}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}},
		{"unknown type", kadm.ClientQuotaEntity{{Type: "group", Name: strp("g")}}, kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1}},
	} {
		if err := set(bad.entity, bad.op); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%s: %v, want INVALID_REQUEST", bad.name, err)
		}
	}
	if got := describe(false); len(got) != 2 {
		t.Errorf("after the refused alterations: %v; want alice's and the default user's only", got)
	}
}

// TestClientQuotasThrottle: a client over its produce byte rate is told
// to back off (ThrottleMillis, Kafka's (rate - bound) / bound × window)
// while another client id is not; a consumer over its fetch byte rate gets
// its next fetch answered at once with no records and a throttle time.
func TestClientQuotasThrottle(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	const topic = "metered-bytes"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("slow")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1000}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: strp("slow-reader")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1000}}},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
	// 20,000 bytes at once against 1,000 B/s over Kafka's 10-second
	// minimum window: a rate of 2,000 B/s, throttled (2000-1000)/1000 ×
	// 10 s = 10 s.
	batch := buildRecordBatch(-1, -1, -1, time.Now().UnixMilli(), []rawRecord{{Value: bytes.Repeat([]byte("x"), 20000)}})
	produce := func(clientID string) *kmsg.ProduceResponse {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID(clientID))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce as %s: %v", clientID, kerr.ErrorForCode(code))
		}
		return resp
	}
	if got := produce("slow").ThrottleMillis; got < 9000 || got > 11000 {
		t.Errorf("client slow (1000 B/s) after 20,000 bytes: throttled %d ms, want about 10,000", got)
	}
	if got := produce("fast").ThrottleMillis; got != 0 {
		t.Errorf("client fast (no quota): throttled %d ms", got)
	}

	reader, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("slow-reader"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	fetch := func() *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, reader)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := fetch()
	if len(first.Topics) != 1 || first.ThrottleMillis != 0 {
		t.Fatalf("first fetch of slow-reader: throttle %d ms, %d topics; want the records, unthrottled", first.ThrottleMillis, len(first.Topics))
	}
	// The log holds two 20,000-byte batches; ten seconds of 1,000 B/s
	// lower the fetch's MaxBytes to 10,000: the first batch comes whole
	// (KIP-74), not the second.
	if n := len(first.Topics[0].Partitions[0].RecordBatches); n < 20000 || n >= 40000 {
		t.Errorf("first fetch of slow-reader returned %d bytes of batches, want the first 20,000-byte batch alone", n)
	}
	second := fetch()
	if second.ThrottleMillis <= 0 || len(second.Topics) != 0 {
		t.Errorf("second fetch of slow-reader, over 1000 B/s: throttle %d ms, %d topics; want a throttle and no records", second.ThrottleMillis, len(second.Topics))
	}
}
