package broker

// DescribeLogDirs (key 35), versions 0-5 (v2+ flexible; v3 adds the
// top-level error code, v4 the directory's total and usable bytes, v5 the
// cordoned flag, always false here).
//
// samsa keeps every log in one directory (log.dirs), so the answer has
// one directory: <log.dirs>/logs, with each requested partition hosted
// here (every hosted one when Topics is null), its log size and its
// offset lag, which for a current (not future) log is Kafka's
// max(high watermark - log end offset, 0). Partitions not hosted here are
// left out, as Kafka does. Version 0, which Kafka 4.x no longer serves
// (KIP-896), is served as well: older clients send it. It needs DESCRIBE
// on the cluster: without it the answer is
// CLUSTER_AUTHORIZATION_FAILED from v3, no directory before.

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

func (b *Broker) handleDescribeLogDirs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !b.authz(req).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return reply(resp)
	}
	// want reports whether a partition was asked for.
	want := func(string, int32) bool { return true }
	if r.Topics != nil {
		asked := map[topicPartition]bool{}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				asked[topicPartition{t.Topic, p}] = true
			}
		}
		want = func(topic string, p int32) bool { return asked[topicPartition{topic, p}] }
	}
	b.partitions.mu.RLock()
	parts := slices.Collect(maps.Values(b.partitions.parts))
	b.partitions.mu.RUnlock()
	slices.SortFunc(parts, func(x, y *localPartition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Index, y.Index))
	})
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.logDir()
	dir.TotalBytes, dir.UsableBytes = diskSpace(dir.Dir)
	for _, lp := range parts {
		if !want(lp.Topic, lp.Index) {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != lp.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = lp.Topic
			dir.Topics = append(dir.Topics, t)
		}
		l := lp.Log()
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition = lp.Index
		p.Size = l.Size()
		p.OffsetLag = max(lp.HighWatermark()-l.EndOffset(), 0)
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return reply(resp)
}
