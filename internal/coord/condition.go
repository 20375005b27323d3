package coord

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Condition is an extra precondition of a compare-and-swap: "key K still
// has this create (or mod) revision". The write commits only if every
// condition holds, in the same etcd transaction. Build conditions with the
// constructors below; the zero Condition is invalid.
type Condition struct {
	rel   string // key relative to the cluster prefix
	field condField
	value int64
	what  string // for error messages, e.g. "registration of broker 3"
}

type condField int

const (
	condCreateRevision condField = iota + 1
	condModRevision
)

// BrokerRegistered holds while broker id's registration is the one with
// the given create revision (VersionedBroker.CreateRevision): the same
// live incarnation, not expired, not replaced by a restart. A leader adds
// a follower to the ISR under this condition (DESIGN §4).
func BrokerRegistered(id int32, createRevision int64) Condition {
	return Condition{
		rel:   relBroker(id),
		field: condCreateRevision,
		value: createRevision,
		what:  fmt.Sprintf("registration of broker %d (create revision %d)", id, createRevision),
	}
}

// TopicUnchanged holds while the topic key still has the given mod
// revision (VersionedTopic.ModRevision).
func TopicUnchanged(name string, modRevision int64) Condition {
	return Condition{
		rel:   relTopic(name),
		field: condModRevision,
		value: modRevision,
		what:  fmt.Sprintf("topic %q (mod revision %d)", name, modRevision),
	}
}

func (cd Condition) valid() bool {
	return cd.rel != "" && cd.field != 0 && cd.value > 0
}

func (cd Condition) cmp(k keyspace) clientv3.Cmp {
	key := k.abs(cd.rel)
	if cd.field == condCreateRevision {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", cd.value)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", cd.value)
}

// holds evaluates the condition against the key as read (nil: absent), to
// tell the caller which condition failed.
func (cd Condition) holds(kv *mvccpb.KeyValue) bool {
	var got int64
	if kv != nil {
		if cd.field == condCreateRevision {
			got = kv.CreateRevision
		} else {
			got = kv.ModRevision
		}
	}
	return got == cd.value
}

// String describes the condition.
func (cd Condition) String() string { return cd.what }
