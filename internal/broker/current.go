package broker

import "sync/atomic"

// DefaultMetricsListener is samsa server's metrics.listener when none is
// set.
const DefaultMetricsListener = "http://localhost:9644"

// Current holds the broker incarnation that Run serves with: set once an
// incarnation serves, cleared when it stops (Config.Current). Views that
// outlive incarnations (the metrics listener) read it.
type Current struct{ p atomic.Pointer[Broker] }

// Get returns the serving incarnation, nil if none serves now.
func (c *Current) Get() *Broker {
	if c == nil {
		return nil
	}
	return c.p.Load()
}

func (c *Current) set(b *Broker) {
	if c != nil {
		c.p.Store(b)
	}
}

// clear forgets b if it is the one held.
func (c *Current) clear(b *Broker) {
	if c != nil {
		c.p.CompareAndSwap(b, nil)
	}
}
