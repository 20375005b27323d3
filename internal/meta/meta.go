// Package meta is samsa's cluster metadata model: brokers, topics with their
// replica assignments and configuration overrides, and the state of every
// partition (leader, leader epoch, ISR). Values are stored in etcd as JSON by
// internal/coord; this package only defines them and their encoding.
//
// Terms are Kafka's (see docs/GLOSSARY.md). A single-node samsa is a cluster of
// one: its partitions have a leader (that broker), a leader epoch and an ISR of
// one, stored exactly as they would be in a larger cluster.
package meta

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// NoLeader is the leader id of a partition that has no leader (offline).
const NoLeader int32 = -1

// Broker is one broker's registration: how clients reach it and where it runs.
type Broker struct {
	ID int32 `json:"id"`
	// Host and Port are the advertised address of the inter-broker
	// listener (inter.broker.listener.name), where other brokers connect.
	Host string `json:"host"`
	Port int32  `json:"port"`
	// Endpoints are the advertised addresses of all the broker's
	// listeners, by listener name (advertised.listeners): a client is
	// told the addresses of the listener it connected to. Empty in a
	// registration written before listeners had names: Host and Port are
	// then the only listener's.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Rack is the broker.rack setting; empty when unset.
	Rack string `json:"rack,omitempty"`
	// StartedUnixMs is when the registering process started; it tells a
	// restarted broker apart from its previous incarnation.
	StartedUnixMs int64 `json:"started_unix_ms"`
	// ShuttingDown is set by a broker in controlled shutdown: the
	// controller moves its leadership and ISR memberships away first.
	ShuttingDown bool `json:"shutting_down,omitempty"`
	// Recovering is set by a broker restarted after an unclean shutdown
	// (its data directory had no clean-shutdown marker): the controller
	// removes it from every ISR it shares with another replica and it
	// leads nothing until the flag clears. The broker clears it once no
	// partition lists it as leader or in an ISR with a member that could
	// take over; it then rejoins ISRs only through the leaders' normal
	// expansion, once caught up (docs/replication.md, invariant 10).
	Recovering bool `json:"recovering,omitempty"`
	// MetricsURL is the advertised base URL of the broker's metrics
	// listener (metrics.listener, a wildcard host replaced by Host),
	// where the console reads other brokers' views; empty if none.
	MetricsURL string `json:"metrics_url,omitempty"`
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	// Listener is the listener's name, upper case ("PLAINTEXT", "CLIENT").
	Listener string `json:"listener"`
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string `json:"security_protocol"`
	Host             string `json:"host"`
	Port             int32  `json:"port"`
}

// Endpoint returns the broker's endpoint for the named listener. A
// registration without endpoints (written before listeners had names)
// has one, Host and Port, whatever the name.
func (b Broker) Endpoint(listener string) (Endpoint, bool) {
	if len(b.Endpoints) == 0 {
		return Endpoint{Listener: listener, SecurityProtocol: "PLAINTEXT", Host: b.Host, Port: b.Port}, true
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// TopicID is a topic's 16-byte UUID (Kafka's topic id, KIP-516).
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID. Like Kafka's
// Uuid.randomUuid, it never returns one whose printed form starts with '-'
// (a command line would take it for a flag).
func NewTopicID() TopicID {
	for {
		var id TopicID
		if _, err := rand.Read(id[:]); err != nil {
			panic(fmt.Sprintf("meta: crypto/rand: %v", err))
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if !strings.HasPrefix(id.String(), "-") {
			return id
		}
	}
}

// String renders the id the way Kafka tools print it: URL-safe base64
// without padding.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID parses the form String returns.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("%w: topic id %q", ErrCorrupt, s)
	}
	copy(id[:], b)
	return id, nil
}

// IsZero reports whether the id is all zero (Kafka's "no topic id").
func (id TopicID) IsZero() bool { return id == TopicID{} }

// Topic is a topic's definition: its id, the replica assignment of every
// partition (index = partition number; the first replica is the preferred
// leader) and its configuration overrides (Kafka names, string values).
type Topic struct {
	Name       string            `json:"name"`
	ID         TopicID           `json:"id"`
	Partitions [][]int32         `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// Clone returns a deep copy of t.
func (t Topic) Clone() Topic {
	c := t
	c.Partitions = make([][]int32, len(t.Partitions))
	for i, r := range t.Partitions {
		c.Partitions[i] = slices.Clone(r)
	}
	if t.Configs != nil {
		c.Configs = make(map[string]string, len(t.Configs))
		for k, v := range t.Configs {
			c.Configs[k] = v
		}
	}
	return c
}

// PartitionState is the replication state of one partition. The controller
// writes it on elections and the leader writes it on ISR changes, always by
// compare-and-swap on the etcd key's revision.
type PartitionState struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Leader is the broker id of the leader, or NoLeader.
	Leader int32 `json:"leader"`
	// LeaderEpoch is bumped by every leader election.
	LeaderEpoch int32 `json:"leader_epoch"`
	// ISR is the in-sync replica set; the leader is always a member.
	ISR []int32 `json:"isr"`
	// PartitionEpoch is bumped by every change of this state (elections and
	// ISR changes alike), like Kafka's partition epoch (KIP-380/KIP-841).
	PartitionEpoch int32 `json:"partition_epoch"`
	// ControllerEpoch is the epoch of the controller that last elected a
	// leader for this partition.
	ControllerEpoch int64 `json:"controller_epoch"`
}

// ISRChange is one stored change of a partition's leader or ISR, as the
// partition's ISR history in etcd keeps it (the last few per partition):
// the state written, the one it replaced, who wrote it and why.
type ISRChange struct {
	TimeUnixMs     int64   `json:"time_unix_ms"`
	PartitionEpoch int32   `json:"partition_epoch"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	ISR            []int32 `json:"isr"`
	PreviousLeader int32   `json:"previous_leader"`
	PreviousISR    []int32 `json:"previous_isr"`
	// By is the writer: "controller N" (elections, a broker's loss or
	// shutdown) or "leader N" (shrinks and expansions).
	By     string `json:"by"`
	Reason string `json:"reason"`
}

// Clone returns a deep copy of s.
func (s PartitionState) Clone() PartitionState {
	c := s
	c.ISR = slices.Clone(s.ISR)
	return c
}

// Encode returns the JSON encoding of v (Broker, Topic or PartitionState).
func Encode(v any) ([]byte, error) { return json.Marshal(v) }

// ErrCorrupt reports a stored value that does not decode.
var ErrCorrupt = errors.New("meta: corrupt value")

// Decode decodes JSON produced by Encode into v.
func Decode(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// ScramCredential is one user's salted SCRAM credential for one mechanism
// (RFC 5802): what the broker keeps instead of a password. StoredKey and
// ServerKey let it check a client's proof and prove itself, and neither
// gives the password or lets anyone log in with it.
type ScramCredential struct {
	// Mechanism is SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}
