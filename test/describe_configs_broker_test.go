package test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
)

// DescribeConfigs of a broker lists every setting the broker has, each
// with its type and, when asked (v3+), its documentation, as Kafka's does
// (sarama's functional TestFuncAdminDescribeConfig and
// TestFuncAdminIncrementalAlterConfigs read them).
func TestDescribeConfigsBroker(t *testing.T) {
	b := StartBroker(t, func(c *broker.Config) { c.CleanerBackoff = 1234 * time.Millisecond })
	rc := dialBad(t, b.Addr)
	describe := func(names ...string) []kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		r := kmsg.NewPtrDescribeConfigsRequest()
		r.Version, r.IncludeDocumentation = 4, true
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", names
		r.Resources = append(r.Resources, res)
		resp := rc.roundTrip(r).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("DescribeConfigs: %+v", resp)
		}
		return resp.Resources[0].Configs
	}

	all := describe()
	seen := map[string]bool{}
	for _, c := range all {
		seen[c.Name] = true
		if c.Documentation == nil || *c.Documentation == "" {
			t.Errorf("%s: no documentation", c.Name)
		}
		if c.ConfigType == kmsg.ConfigTypeUnknown {
			t.Errorf("%s: unknown type", c.Name)
		}
	}
	for _, name := range []string{"node.id", "log.cleaner.backoff.ms", "group.initial.rebalance.delay.ms", "offsets.topic.num.partitions", "replica.lag.time.max.ms", "log.retention.ms"} {
		if !seen[name] {
			t.Errorf("%s: not described", name)
		}
	}

	one := describe("log.cleaner.backoff.ms")
	if len(one) != 1 || one[0].Value == nil || *one[0].Value != "1234" || one[0].ConfigType != kmsg.ConfigTypeLong {
		t.Fatalf("log.cleaner.backoff.ms: %+v, want one config of type LONG, value 1234", one)
	}
}
