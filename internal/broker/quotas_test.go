package broker

import (
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
)

// TestQuotaResolutionOrder: the first of Kafka's eight entities with the
// key gives the bound.
func TestQuotaResolutionOrder(t *testing.T) {
	s := func(v string) *string { return &v }
	user := func(n *string) meta.QuotaComponent { return meta.QuotaComponent{Type: meta.QuotaUser, Name: n} }
	client := func(n *string) meta.QuotaComponent { return meta.QuotaComponent{Type: meta.QuotaClientID, Name: n} }
	entities := [][]meta.QuotaComponent{
		{client(s("c")), user(s("u"))},
		{client(nil), user(s("u"))},
		{user(s("u"))},
		{client(s("c")), user(nil)},
		{client(nil), user(nil)},
		{user(nil)},
		{client(s("c"))},
		{client(nil)},
	}
	index := func(es ...[]meta.QuotaComponent) *quotaIndex {
		ix := &quotaIndex{values: map[quotaEntityKey]map[string]float64{}}
		for _, e := range es {
			k, ok := entityKey(e)
			if !ok {
				t.Fatalf("entityKey(%v) not ok", e)
			}
			ix.values[k] = map[string]float64{meta.QuotaProducerByteRate: float64(len(ix.values) + 1)}
		}
		return ix
	}
	// With entities i.. present, entity i decides (its bound is 1).
	for i := range entities {
		ix := index(entities[i:]...)
		bound, _, ok := ix.resolve(meta.QuotaProducerByteRate, "u", "c")
		if !ok || bound != 1 {
			t.Errorf("entities %d..: bound %v, %v; want entity %d's", i+1, bound, ok, i+1)
		}
		if _, _, ok := ix.resolve(meta.QuotaConsumerByteRate, "u", "c"); ok {
			t.Errorf("entities %d..: a consumer quota resolved where only producer ones exist", i+1)
		}
	}
	// Sensors are shared by what the entity covers (Kafka's metric tags).
	sameSensor := func(e []meta.QuotaComponent, u1, c1, u2, c2 string) bool {
		ix := index(e)
		_, a, ok1 := ix.resolve(meta.QuotaProducerByteRate, u1, c1)
		_, b, ok2 := ix.resolve(meta.QuotaProducerByteRate, u2, c2)
		if !ok1 || !ok2 {
			t.Fatalf("%v does not cover (%s,%s) and (%s,%s)", e, u1, c1, u2, c2)
		}
		return a == b
	}
	for _, tc := range []struct {
		entity         []meta.QuotaComponent
		u1, c1, u2, c2 string
		shared         bool
	}{
		{[]meta.QuotaComponent{user(s("u"))}, "u", "c", "u", "c2", true},
		{[]meta.QuotaComponent{user(nil)}, "u", "c", "u", "c2", true},
		{[]meta.QuotaComponent{user(nil)}, "u", "c", "u2", "c", false},
		{[]meta.QuotaComponent{client(nil)}, "u", "c", "u2", "c", true},
		{[]meta.QuotaComponent{client(nil)}, "u", "c", "u", "c2", false},
		{[]meta.QuotaComponent{client(nil), user(s("u"))}, "u", "c", "u", "c2", false},
	} {
		if got := sameSensor(tc.entity, tc.u1, tc.c1, tc.u2, tc.c2); got != tc.shared {
			t.Errorf("%v: (%s,%s) and (%s,%s) share a sensor: %v, want %v", tc.entity, tc.u1, tc.c1, tc.u2, tc.c2, got, tc.shared)
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
	// Far over a tiny bound: capped, never overflowing.
	var huge rateSensor
	if d := huge.record(now, 1e15, 1); d != maxThrottle {
		t.Errorf("10^15 bytes at 1 B/s: throttled %v, want the cap %v", d, maxThrottle)
	}
	// Eleven seconds later the samples have left the window.
	if d := r.record(now+12000, 1, 1000); d != 0 {
		t.Errorf("after the window: throttled %v", d)
	}
}
