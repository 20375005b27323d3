package group

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record key versions: Kafka's OffsetCommitKey is version 0 or 1 (the same
// layout), GroupMetadataKey version 2.
const (
	offsetKeyVersion   = 1
	groupKeyVersion    = 2
	offsetValueVersion = 3 // with the leader epoch
	groupValueVersion  = 3 // with group instance ids
)

// Offset is a committed offset.
type Offset struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// CommitTimestamp is when it was committed (milliseconds).
	CommitTimestamp int64
	// end is the end of the record that wrote it in the partition (0 if
	// unknown): of a transactional commit and a plain one of the same
	// partition, the later record wins.
	end int64
}

// pendingCommit is a transactional offset commit replayed by a load,
// awaiting its transaction's marker.
type pendingCommit struct {
	group string
	tp    topicPartition
	o     Offset
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetValue(o Offset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// groupValue encodes g's membership as of its last completed rebalance.
func groupValue(g *group) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	for _, id := range g.memberOrder() {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.id, m.clientID, m.clientHost
		if m.instanceID != "" {
			vm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = m.assignment
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// maxRecordString is the longest string a record of __consumer_offsets
// holds: Kafka's formats give strings an int16 length. A longer one would
// be written with a length that wraps (kmsg's AppendString writes
// int16(len)), and read back as another string followed by bytes that the
// reader ignores: a group id of len(victim)+65536 bytes would read back as
// the victim's key. So every string a write takes from a request is
// checked against it first (lookupLocked, StartCommitOffsets, StartJoin),
// and decodeRecord refuses a record whose length does not match its
// fields.
const maxRecordString = 1<<15 - 1

// maxTopicName is the longest topic name Kafka allows: a commit for a
// longer one cannot name a topic that exists.
const maxTopicName = 249

// Encoded sizes, from the lengths of the parts (Kafka's formats: int16
// string lengths, int32 bytes lengths, null as length -1).
func strSize(s string) int   { return 2 + len(s) }
func bytesSize(b []byte) int { return 4 + len(b) }

// offsetRecordSize bounds the size in a batch of an offset commit's record.
func offsetRecordSize(group, topic, metadata string) int {
	key := 2 + strSize(group) + strSize(topic) + 4
	value := 2 + 8 + 4 + strSize(metadata) + 8
	return recordOverhead + key + value
}

// tombstoneSize bounds the size in a batch of an offset's tombstone.
func tombstoneSize(group, topic string) int {
	return recordOverhead + 2 + strSize(group) + strSize(topic) + 4
}

// groupTombstoneSize bounds the size in a batch of a group's tombstone.
func groupTombstoneSize(group string) int { return recordOverhead + 2 + strSize(group) }

// groupRecordSize is the size in a batch of g's metadata record as
// groupValue encodes it, computed without encoding it (a group's
// subscriptions and assignments may add up to more than any batch).
func groupRecordSize(g *group) int {
	value := 2 + strSize(g.protocolType) + 4 + strSize(g.protocol) + strSize(g.leader) + 8 + 4
	for _, m := range g.members {
		value += strSize(m.id) + strSize(m.instanceID) + strSize(m.clientID) + strSize(m.clientHost) + 4 + 4 +
			bytesSize(m.metadataFor(g.protocol)) + bytesSize(m.assignment)
	}
	return groupTombstoneSize(g.id) + value
}

// errBadRecord is a record of __consumer_offsets that cannot be decoded.
var errBadRecord = errors.New("group: undecodable __consumer_offsets record")

// decoded is one record of __consumer_offsets taken apart: an offset
// (topic set) or a group's metadata; value nil for a tombstone.
type decoded struct {
	group     string
	topic     string
	partition int32
	isOffset  bool
	offset    *Offset
	meta      *kmsg.GroupMetadataValue
}

// decodeRecord takes a record apart. A key or value whose fields do not
// add up to its length exactly (trailing bytes: a string written with a
// wrapped length) is refused, so that such a record is skipped rather than
// read as another key.
func decodeRecord(key, value []byte) (decoded, error) {
	if len(key) < 2 {
		return decoded{}, fmt.Errorf("%w: key of %d bytes", errBadRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return decoded{}, fmt.Errorf("%w: offset key: %v", errBadRecord, err)
		}
		if n := len(k.AppendTo(nil)); n != len(key) {
			return decoded{}, fmt.Errorf("%w: offset key of %d bytes holds %d", errBadRecord, len(key), n)
		}
		d := decoded{group: k.Group, topic: k.Topic, partition: k.Partition, isOffset: true}
		if value != nil {
			var ov kmsg.OffsetCommitValue
			if err := ov.ReadFrom(value); err != nil {
				return decoded{}, fmt.Errorf("%w: offset value: %v", errBadRecord, err)
			}
			if n := len(ov.AppendTo(nil)); n != len(value) {
				return decoded{}, fmt.Errorf("%w: offset value of %d bytes holds %d", errBadRecord, len(value), n)
			}
			le := int32(-1)
			if ov.Version >= 3 {
				le = ov.LeaderEpoch
			}
			d.offset = &Offset{Offset: ov.Offset, LeaderEpoch: le, Metadata: ov.Metadata, CommitTimestamp: ov.CommitTimestamp}
		}
		return d, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return decoded{}, fmt.Errorf("%w: group key: %v", errBadRecord, err)
		}
		if n := len(k.AppendTo(nil)); n != len(key) {
			return decoded{}, fmt.Errorf("%w: group key of %d bytes holds %d", errBadRecord, len(key), n)
		}
		d := decoded{group: k.Group}
		if value != nil {
			gv := new(kmsg.GroupMetadataValue)
			if err := gv.ReadFrom(value); err != nil {
				return decoded{}, fmt.Errorf("%w: group value: %v", errBadRecord, err)
			}
			if n := len(gv.AppendTo(nil)); n != len(value) {
				return decoded{}, fmt.Errorf("%w: group value of %d bytes holds %d", errBadRecord, len(value), n)
			}
			d.meta = gv
		}
		return d, nil
	default:
		return decoded{}, fmt.Errorf("%w: key version %d", errBadRecord, v)
	}
}
