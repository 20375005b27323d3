package broker

// Client quotas (docs/quotas.md): produce and fetch byte rates per user
// and client id, stored in etcd (coord, DescribeClientQuotas and
// AlterClientQuotas) and enforced by throttling, as Kafka's
// ClientQuotaManager does:
//
//   - The quota of a request is the first of Kafka's eight entities that
//     has one: user and client id, user and default client, user, default
//     user and client id, default user and default client, default user,
//     client id, default client. Its sensor is shared by what that entity
//     covers: a user quota by all the user's clients, a default-user quota
//     by each user on its own.
//   - A sensor measures bytes over 11 one-second samples; a request over
//     the bound gets a throttle time of (rate - bound) / bound × window,
//     at most maxThrottle, answered in ThrottleMillis, and the connection
//     is not read from for that long once the response is queued (KIP-219:
//     the client backs off too). A Produce is appended first and its bytes
//     counted; a Fetch of a consumer over its bound is answered at once
//     with no records, and no consumer Fetch returns more than ten
//     seconds' worth of its bound. At most maxQuotaSensors sensors are
//     kept; beyond, new clients share one per quota key.
//   - Followers' fetches are never throttled (replication quotas are not
//     implemented); request_percentage, controller_mutation_rate and
//     connection_creation_rate are stored and described, not enforced.

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/internal/coord"
	"github.com/samsa-io/samsa/internal/meta"
	"github.com/samsa-io/samsa/internal/protocol"
)

// Quota window: Kafka's quota.window.num and quota.window.size.seconds.
const (
	quotaSamples      = 11
	quotaSampleMillis = 1000
	// quotaSensorIdle is how long an unused sensor is kept (Kafka
	// expires them after an hour).
	quotaSensorIdle = time.Hour
	// maxQuotaSensors bounds the sensors kept: beyond it, the clients
	// of new sensors share one per quota key (many client ids under a
	// default quota cannot run the broker out of memory).
	maxQuotaSensors = 10000
	// maxThrottle caps a throttle time (Kafka's default
	// connections.max.idle.ms): a tiny quota against a large request
	// must not mute a connection for days, nor overflow ThrottleMillis.
	maxThrottle = 10 * time.Minute
)

// componentKind is how a quota entity names a user or client id.
type componentKind uint8

const (
	absent componentKind = iota
	defaultName
	named
)

// quotaEntityKey is a user/client-id entity as a map key: no string is
// built to look one up.
type quotaEntityKey struct {
	userKind, clientKind componentKind
	user, client         string
}

// entityKey returns the key of a canonical user/client-id entity; ok is
// false for an ip entity.
func entityKey(entity []meta.QuotaComponent) (k quotaEntityKey, ok bool) {
	for _, c := range entity {
		kind, name := defaultName, ""
		if c.Name != nil {
			kind, name = named, *c.Name
		}
		switch c.Type {
		case meta.QuotaUser:
			k.userKind, k.user = kind, name
		case meta.QuotaClientID:
			k.clientKind, k.client = kind, name
		default:
			return k, false
		}
	}
	return k, true
}

// quotaIndex is the cluster's user/client-id quotas, built from one
// metadata revision.
type quotaIndex struct {
	revision int64
	values   map[quotaEntityKey]map[string]float64
}

// quotaManager enforces the byte-rate quotas of one broker incarnation.
type quotaManager struct {
	index atomic.Pointer[quotaIndex]

	mu      sync.Mutex
	sensors map[sensorKey]*rateSensor
	swept   time.Time
}

// sensorKey names a sensor: the quota key and a hash of the entity whose
// usage it measures (two entities colliding share a sensor, which only
// throttles them together).
type sensorKey struct {
	quota string
	hash  uint64
}

func newQuotaManager() *quotaManager {
	return &quotaManager{sensors: map[sensorKey]*rateSensor{}}
}

// current returns the quota index of s, rebuilt when its quotas changed.
// Values that do not validate (a hand-written key) are left out.
func (q *quotaManager) current(s *coord.Snapshot) *quotaIndex {
	if ix := q.index.Load(); ix != nil && ix.revision == s.QuotaRevision {
		return ix
	}
	ix := &quotaIndex{revision: s.QuotaRevision, values: make(map[quotaEntityKey]map[string]float64, len(s.Quotas))}
	for _, cq := range s.Quotas {
		k, ok := entityKey(cq.Entity)
		if !ok {
			continue
		}
		vals := map[string]float64{}
		for key, v := range cq.Values {
			if meta.ValidateQuotaValue(cq.Entity, key, v) == nil {
				vals[key] = v
			}
		}
		ix.values[k] = vals
	}
	q.index.Store(ix)
	return ix
}

// principalUser is the quota user of a connection's principal: the name
// after "User:" (Kafka's sanitized user; ANONYMOUS when unauthenticated).
func principalUser(principal string) string {
	if name, ok := strings.CutPrefix(principal, "User:"); ok {
		return name
	}
	return principal
}

// quotaSeed keys the sensor hashes of this process.
var quotaSeed = maphash.MakeSeed()

// resolve finds the bound of key for user and clientID and the sensor
// that measures it; ok is false when no entity sets key.
func (ix *quotaIndex) resolve(key, user, clientID string) (bound float64, sensor sensorKey, ok bool) {
	if len(ix.values) == 0 {
		return 0, sensorKey{}, false
	}
	cands := [...]quotaEntityKey{
		{userKind: named, user: user, clientKind: named, client: clientID},
		{userKind: named, user: user, clientKind: defaultName},
		{userKind: named, user: user},
		{userKind: defaultName, clientKind: named, client: clientID},
		{userKind: defaultName, clientKind: defaultName},
		{userKind: defaultName},
		{clientKind: named, client: clientID},
		{clientKind: defaultName},
	}
	for _, cd := range cands {
		v, found := ix.values[cd][key]
		if !found {
			continue
		}
		// The sensor's tags: the actual user and client id, for the
		// components the entity has (Kafka's quotaMetricTags).
		var h maphash.Hash
		h.SetSeed(quotaSeed)
		if cd.userKind != absent {
			h.WriteString("user=")
			h.WriteString(user)
		}
		h.WriteByte(0)
		if cd.clientKind != absent {
			h.WriteString("client-id=")
			h.WriteString(clientID)
		}
		return v, sensorKey{quota: key, hash: h.Sum64()}, true
	}
	return 0, sensorKey{}, false
}

// bound returns the bound of key for req's client, if any.
func (q *quotaManager) bound(s *coord.Snapshot, key string, req *protocol.Request) (float64, bool) {
	if q == nil || req.Conn == nil {
		return 0, false
	}
	bound, _, ok := q.current(s).resolve(key, principalUser(req.Conn.Principal), clientIDOf(req))
	return bound, ok
}

// record counts bytes of a request of key for the request's client and
// returns how long it must be throttled (0: within its quota, or none).
func (q *quotaManager) record(s *coord.Snapshot, key string, req *protocol.Request, bytes int64, now time.Time) time.Duration {
	if q == nil || req.Conn == nil {
		return 0
	}
	bound, name, ok := q.current(s).resolve(key, principalUser(req.Conn.Principal), clientIDOf(req))
	if !ok {
		return 0
	}
	return q.sensor(name, now).record(now.UnixMilli(), float64(bytes), bound)
}

func clientIDOf(req *protocol.Request) string {
	if req.ClientID == nil {
		return ""
	}
	return *req.ClientID
}

// sensor returns the named sensor, made if new; idle ones are swept now
// and then. Past maxQuotaSensors, new clients share one sensor per key.
func (q *quotaManager) sensor(name sensorKey, now time.Time) *rateSensor {
	q.mu.Lock()
	defer q.mu.Unlock()
	if now.Sub(q.swept) > time.Minute {
		q.swept = now
		for n, s := range q.sensors {
			if now.UnixMilli()-s.lastUsed.Load() > quotaSensorIdle.Milliseconds() {
				delete(q.sensors, n)
			}
		}
	}
	s := q.sensors[name]
	if s == nil {
		if len(q.sensors) >= maxQuotaSensors {
			name.hash = 0 // the overflow sensor of this key
			if s = q.sensors[name]; s != nil {
				return s
			}
		}
		s = &rateSensor{}
		q.sensors[name] = s
	}
	return s
}

// rateSensor measures a rate over quotaSamples samples of
// quotaSampleMillis each (Kafka's Rate over a SampledStat).
type rateSensor struct {
	lastUsed atomic.Int64
	mu       sync.Mutex
	start    [quotaSamples]int64 // each sample's start, ms; 0: unused
	total    [quotaSamples]float64
}

// record adds v at now (ms) and returns the throttle time for bound, at
// most maxThrottle.
func (r *rateSensor) record(now int64, v, bound float64) time.Duration {
	r.lastUsed.Store(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := now / quotaSampleMillis
	i := slot % quotaSamples
	if r.start[i] != slot*quotaSampleMillis {
		r.start[i], r.total[i] = slot*quotaSampleMillis, 0
	}
	r.total[i] += v
	// The samples within the window, and the oldest one's start.
	oldest, sum := now, 0.0
	for j := range quotaSamples {
		if r.start[j] != 0 && now-r.start[j] < quotaSamples*quotaSampleMillis {
			sum += r.total[j]
			oldest = min(oldest, r.start[j])
		}
	}
	// Kafka's Rate.windowSize: at least samples-1 whole samples.
	window := now - oldest
	if full := window / quotaSampleMillis; full < quotaSamples-1 {
		window += (quotaSamples - 1 - full) * quotaSampleMillis
	}
	window = max(window, 1)
	rate := sum * 1000 / float64(window)
	if !(bound > 0) || rate <= bound {
		return 0
	}
	ms := (rate - bound) / bound * float64(window)
	if ms >= float64(maxThrottle.Milliseconds()) {
		return maxThrottle
	}
	return time.Duration(ms * float64(time.Millisecond))
}
