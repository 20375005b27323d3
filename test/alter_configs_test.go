package test

// AlterConfigs (key 33), the legacy non-incremental API, with the clients
// that still use it: kafka-go's Client.AlterConfigs and kadm's
// AlterTopicConfigsState. The configs a request lists replace the topic's
// dynamic configs; what it leaves out goes back to the default.

import (
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAlterConfigs(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, 60*time.Second)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	const topic = "legacy-alter"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	// want asserts the topic's configs: name → value for dynamic ones,
	// name → "" for ones that must be back at their default.
	want := func(t *testing.T, configs map[string]string) {
		t.Helper()
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatalf("describe configs: %v", err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("describe configs: %v / %v", err, rc.Err)
		}
		for name, value := range configs {
			var got *kadm.Config
			for i := range rc.Configs {
				if rc.Configs[i].Key == name {
					got = &rc.Configs[i]
				}
			}
			switch {
			case got == nil:
				t.Errorf("%s not described", name)
			case value == "" && got.Source == kmsg.ConfigSourceDynamicTopicConfig:
				t.Errorf("%s = %q, still a topic override; want the default", name, got.MaybeValue())
			case value != "" && (got.MaybeValue() != value || got.Source != kmsg.ConfigSourceDynamicTopicConfig):
				t.Errorf("%s = %q from %v, want %q from the topic", name, got.MaybeValue(), got.Source, value)
			}
		}
	}

	// kafka-go, which sends AlterConfigs v0.
	kg := &kafka.Client{Addr: kafka.TCP(b.Addr), Timeout: 10 * time.Second, Transport: &kafka.Transport{}}
	kgAlter := func(t *testing.T, validateOnly bool, configs ...kafka.AlterConfigRequestConfig) error {
		t.Helper()
		resp, err := kg.AlterConfigs(ctx, &kafka.AlterConfigsRequest{
			Resources:    []kafka.AlterConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: configs}},
			ValidateOnly: validateOnly,
		})
		if err != nil {
			t.Fatalf("kafka-go AlterConfigs: %v", err)
		}
		return resp.Errors[kafka.AlterConfigsResponseResource{Type: int8(kafka.ResourceTypeTopic), Name: topic}]
	}

	t.Run("kafka-go sets", func(t *testing.T) {
		if err := kgAlter(t, false, kafka.AlterConfigRequestConfig{Name: "retention.ms", Value: "3600000"},
			kafka.AlterConfigRequestConfig{Name: "cleanup.policy", Value: "compact"}); err != nil {
			t.Fatalf("alter: %v", err)
		}
		want(t, map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact"})
	})
	t.Run("kafka-go replaces", func(t *testing.T) {
		if err := kgAlter(t, false, kafka.AlterConfigRequestConfig{Name: "retention.ms", Value: "7200000"}); err != nil {
			t.Fatalf("alter: %v", err)
		}
		want(t, map[string]string{"retention.ms": "7200000", "cleanup.policy": ""})
	})
	t.Run("kafka-go validate only", func(t *testing.T) {
		if err := kgAlter(t, true, kafka.AlterConfigRequestConfig{Name: "segment.bytes", Value: "1048576"}); err != nil {
			t.Fatalf("alter: %v", err)
		}
		want(t, map[string]string{"retention.ms": "7200000", "segment.bytes": ""})
	})
	t.Run("kafka-go invalid value", func(t *testing.T) {
		err := kgAlter(t, false, kafka.AlterConfigRequestConfig{Name: "retention.ms", Value: "soon"})
		if !errors.Is(err, kafka.InvalidConfiguration) {
			t.Errorf("retention.ms=soon: %v, want %v", err, kafka.InvalidConfiguration)
		}
		want(t, map[string]string{"retention.ms": "7200000"})
	})

	t.Run("kadm replaces", func(t *testing.T) {
		rs, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000000")}}, topic)
		if err != nil {
			t.Fatalf("alter: %v", err)
		}
		if r, err := rs.On(topic, nil); err != nil || r.Err != nil {
			t.Fatalf("alter: %v / %v", err, r.Err)
		}
		want(t, map[string]string{"max.message.bytes": "2000000", "retention.ms": ""})
	})

	// What kadm and kafka-go cannot send or do not show, as a raw request.
	t.Run("errors", func(t *testing.T) {
		str := func(s string) *string { return &s }
		resource := func(typ kmsg.ConfigResourceType, name string, configs ...kmsg.AlterConfigsRequestResourceConfig) kmsg.AlterConfigsRequestResource {
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName, r.Configs = typ, name, configs
			return r
		}
		config := func(name string, value *string) kmsg.AlterConfigsRequestResourceConfig {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = name, value
			return c
		}
		retention := config("retention.ms", str("60000"))
		tests := []struct {
			name     string
			resource kmsg.AlterConfigsRequestResource
			twice    bool
			want     *kerr.Error
		}{
			{"a resource named twice", resource(kmsg.ConfigResourceTypeTopic, topic, retention), true, kerr.InvalidRequest},
			{"a config named twice", resource(kmsg.ConfigResourceTypeTopic, topic, retention, retention), false, kerr.InvalidRequest},
			{"a null value", resource(kmsg.ConfigResourceTypeTopic, topic, config("retention.ms", nil)), false, kerr.InvalidRequest},
			{"an unknown config", resource(kmsg.ConfigResourceTypeTopic, topic, config("no.such.config", str("1"))), false, kerr.InvalidConfig},
			{"an unknown topic", resource(kmsg.ConfigResourceTypeTopic, "no-such-topic", retention), false, kerr.UnknownTopicOrPartition},
			{"this broker", resource(kmsg.ConfigResourceTypeBroker, "1", config("log.retention.ms", str("1"))), false, kerr.InvalidRequest},
			{"the cluster default", resource(kmsg.ConfigResourceTypeBroker, "", config("log.retention.ms", str("1"))), false, kerr.InvalidRequest},
			{"another broker", resource(kmsg.ConfigResourceTypeBroker, "7", config("log.retention.ms", str("1"))), false, kerr.InvalidRequest},
			{"a broker logger", resource(kmsg.ConfigResourceTypeBrokerLogger, "1", config("kafka", str("DEBUG"))), false, kerr.InvalidRequest},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req := kmsg.NewPtrAlterConfigsRequest()
				req.Resources = []kmsg.AlterConfigsRequestResource{tt.resource}
				if tt.twice {
					req.Resources = append(req.Resources, tt.resource)
				}
				// Sent to the broker itself: kgo would route a broker
				// resource to the broker it names.
				r, err := cl.Broker(int(b.Config.NodeID)).Request(ctx, req)
				if err != nil {
					t.Fatalf("request: %v", err)
				}
				resp := r.(*kmsg.AlterConfigsResponse)
				if len(resp.Resources) != len(req.Resources) {
					t.Fatalf("%d resources answered, want %d", len(resp.Resources), len(req.Resources))
				}
				for _, r := range resp.Resources {
					if r.ResourceName != tt.resource.ResourceName || r.ResourceType != tt.resource.ResourceType {
						t.Errorf("answered %v %q, want %v %q", r.ResourceType, r.ResourceName, tt.resource.ResourceType, tt.resource.ResourceName)
					}
					wantKerr(t, tt.name, kerr.ErrorForCode(r.ErrorCode), tt.want)
				}
			})
		}
		want(t, map[string]string{"max.message.bytes": "2000000", "retention.ms": ""})
	})
}
