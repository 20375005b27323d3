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
//     answered in ThrottleMillis, and the connection is not read from for
//     that long once the response is queued (KIP-219: the client backs off
//     too). A Produce is appended first and its bytes counted; a Fetch of
//     a consumer over its bound is answered at once with no records.
//   - Followers' fetches are never throttled (replication quotas are not
//     implemented); request_percentage, controller_mutation_rate and
//     connection_creation_rate are stored and described, not enforced.

import (
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
)

// quotaIndex is the cluster's client quotas by meta.EntityString, built
// from one metadata revision.
type quotaIndex struct {
	revision int64
	values   map[string]map[string]float64
}

// quotaManager enforces the byte-rate quotas of one broker incarnation.
type quotaManager struct {
	index atomic.Pointer[quotaIndex]

	mu      sync.Mutex
	sensors map[string]*rateSensor
	swept   time.Time
}

func newQuotaManager() *quotaManager {
	return &quotaManager{sensors: map[string]*rateSensor{}}
}

// current returns the quota index of s, rebuilt when its quotas changed.
func (q *quotaManager) current(s *coord.Snapshot) *quotaIndex {
	if ix := q.index.Load(); ix != nil && ix.revision == s.QuotaRevision {
		return ix
	}
	ix := &quotaIndex{revision: s.QuotaRevision, values: make(map[string]map[string]float64, len(s.Quotas))}
	for _, cq := range s.Quotas {
		ix.values[meta.EntityString(cq.Entity)] = cq.Values
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

// resolve finds the bound of key for user and clientID and the sensor
// that measures it; ok is false when no entity sets key.
func (ix *quotaIndex) resolve(key, user, clientID string) (bound float64, sensor string, ok bool) {
	if len(ix.values) == 0 {
		return 0, "", false
	}
	u, c := &user, &clientID
	type cand struct {
		user, client *string // nil: the default
		hasUser      bool
		hasClient    bool
	}
	cands := [...]cand{
		{u, c, true, true}, {u, nil, true, true}, {u, nil, true, false},
		{nil, c, true, true}, {nil, nil, true, true}, {nil, nil, true, false},
		{nil, c, false, true}, {nil, nil, false, true},
	}
	for _, cd := range cands {
		var entity []meta.QuotaComponent
		if cd.hasClient {
			entity = append(entity, meta.QuotaComponent{Type: meta.QuotaClientID, Name: cd.client})
		}
		if cd.hasUser {
			entity = append(entity, meta.QuotaComponent{Type: meta.QuotaUser, Name: cd.user})
		}
		v, found := ix.values[meta.EntityString(entity)][key]
		if !found {
			continue
		}
		// The sensor's tags: the actual user and client id, for the
		// components the entity has (Kafka's quotaMetricTags).
		tags := []meta.QuotaComponent{}
		if cd.hasClient {
			tags = append(tags, meta.QuotaComponent{Type: meta.QuotaClientID, Name: c})
		}
		if cd.hasUser {
			tags = append(tags, meta.QuotaComponent{Type: meta.QuotaUser, Name: u})
		}
		return v, key + "/" + meta.EntityString(tags), true
	}
	return 0, "", false
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
// and then.
func (q *quotaManager) sensor(name string, now time.Time) *rateSensor {
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

// record adds v at now (ms) and returns the throttle time for bound.
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
	if rate <= bound {
		return 0
	}
	return time.Duration((rate - bound) / bound * float64(window) * float64(time.Millisecond))
}
