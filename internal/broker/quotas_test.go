package broker

import (
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
)

// TestQuotaResolutionOrder: the first of Kafka's eight entities with the
// key gives the bound, and the sensor is shared as that entity says.
func TestQuotaResolutionOrder(t *testing.T) {
	s := func(v string) *string { return &v }
	user := func(n *string) meta.QuotaComponent { return meta.QuotaComponent{Type: meta.QuotaUser, Name: n} }
	client := func(n *string) meta.QuotaComponent { return meta.QuotaComponent{Type: meta.QuotaClientID, Name: n} }
	entities := []struct {
		entity []meta.QuotaComponent
		bound  float64
	}{
		{[]meta.QuotaComponent{client(s("c")), user(s("u"))}, 1},
		{[]meta.QuotaComponent{client(nil), user(s("u"))}, 2},
		{[]meta.QuotaComponent{user(s("u"))}, 3},
		{[]meta.QuotaComponent{client(s("c")), user(nil)}, 4},
		{[]meta.QuotaComponent{client(nil), user(nil)}, 5},
		{[]meta.QuotaComponent{user(nil)}, 6},
		{[]meta.QuotaComponent{client(s("c"))}, 7},
		{[]meta.QuotaComponent{client(nil)}, 8},
	}
	// With entities i.. present, entity i decides; its sensor covers
	// what it names.
	sensors := []string{"client-id=c&user=u", "client-id=c&user=u", "user=u", "client-id=c&user=u",
		"client-id=c&user=u", "user=u", "client-id=c", "client-id=c"}
	for i := range entities {
		ix := &quotaIndex{values: map[string]map[string]float64{}}
		for _, e := range entities[i:] {
			ix.values[meta.EntityString(e.entity)] = map[string]float64{meta.QuotaProducerByteRate: e.bound}
		}
		bound, sensor, ok := ix.resolve(meta.QuotaProducerByteRate, "u", "c")
		if !ok || bound != entities[i].bound || sensor != meta.QuotaProducerByteRate+"/"+sensors[i] {
			t.Errorf("entities %d..: bound %v, sensor %q, %v; want %v, %q", i+1, bound, sensor, ok, entities[i].bound, sensors[i])
		}
		if _, _, ok := ix.resolve(meta.QuotaConsumerByteRate, "u", "c"); ok {
			t.Errorf("entities %d..: a consumer quota resolved where only producer ones exist", i+1)
		}
	}
}

// TestRateSensorThrottle: Kafka's arithmetic: the rate over at least ten
// whole seconds, and a throttle of (rate - bound) / bound × window.
func TestRateSensorThrottle(t *testing.T) {
	var r rateSensor
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if d := r.record(now, 5000, 1000); d != 0 {
		t.Errorf("5,000 bytes over a 10 s window at 1,000 B/s: throttled %v", d)
	}
	if d := r.record(now+500, 15000, 1000); d < 9*time.Second || d > 11*time.Second {
		t.Errorf("20,000 bytes within a second at 1,000 B/s: throttled %v, want about 10 s", d)
	}
	// Eleven seconds later the samples have left the window.
	if d := r.record(now+12000, 1, 1000); d != 0 {
		t.Errorf("after the window: throttled %v", d)
	}
}
