package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Large Produce frames are read into pooled buffers that are reused once Handle
// returns, while acks=all/1/0 Laters of earlier requests are still
// pending. Pipelined producers (several in flight, several partitions per
// request, uncompressed and lz4) each write records whose values are a
// function of their key; everything is read back and compared. Under
// -race, a read of a request's records after Handle returned (a Later, a
// retained slice) races with the next frame's read into the same buffer.
func TestPooledProduceFramesIntact(t *testing.T) {
	e := startTestEtcd(t)
	// A loaded machine under -race must not lose the broker's session
	// (a new incarnation closes connections: acks=0 data lost, acks=1
	// retried as duplicates, neither of which is what this test is about).
	h := startRun(t, e, e.Endpoints(), func(c *Config) { c.SessionTimeout = 30 * time.Second })
	addr := strings.TrimPrefix(h.cfg.Listeners[0], "PLAINTEXT://")
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const topic, parts = "pool", 3
	if _, err := kadm.NewClient(admin).CreateTopic(h.ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	value := func(key []byte) []byte {
		seed := binary.BigEndian.Uint64(key[len(key)-8:])
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		v := make([]byte, 20<<10+int(seed%4096))
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		return v
	}
	type mode struct {
		name string
		opts []kgo.Opt
	}
	modes := []mode{
		{"acks=all idempotent none", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression())}},
		{"acks=1 lz4", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
		{"acks=0 none", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression())}},
	}
	const perMode = 300
	var wg sync.WaitGroup
	errs := make(chan error, len(modes)*perMode+len(modes))
	for mi, m := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ProducerLinger(20 * time.Millisecond), kgo.ProducerBatchMaxBytes(256 << 10)}, m.opts...)
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			for i := range perMode {
				key := make([]byte, 9)
				key[0] = byte(mi)
				binary.BigEndian.PutUint64(key[1:], uint64(mi)<<32|uint64(i))
				cl.Produce(h.ctx, &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: key, Value: value(key)}, func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- fmt.Errorf("%s: %w", m.name, err)
					}
				})
			}
			if err := cl.Flush(h.ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Read everything up to the end offsets.
	ends, err := kadm.NewClient(admin).ListEndOffsets(h.ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := make(map[string]string)
	count := make([]int, len(modes))
	got := map[int32]int64{}
	done := func() bool {
		for p, o := range want {
			if got[p] < o {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
	defer cancel()
	for !done() {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read back to %v of %v: %v", got, want, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = r.Offset + 1
			if len(r.Key) != 9 || int(r.Key[0]) >= len(modes) {
				t.Fatalf("offset %d: key %x", r.Offset, r.Key)
			}
			if !bytes.Equal(r.Value, value(r.Key)) {
				t.Errorf("partition %d offset %d key %x: value corrupted", r.Partition, r.Offset, r.Key)
			}
			at := fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset)
			if first, ok := seen[string(r.Key)]; ok {
				if r.Key[0] == 0 { // idempotent: exactly once
					t.Errorf("%s key %x: duplicate of %s", at, r.Key, first)
				}
				return
			}
			seen[string(r.Key)] = at
			count[r.Key[0]]++
		})
	}
	t.Logf("end offsets %v; distinct records read per mode %v", want, count)
	for mi, m := range modes[:2] { // acks=0 may lose records on a closed connection
		if count[mi] != perMode {
			t.Errorf("%s: %d of %d records read back", m.name, count[mi], perMode)
		}
	}
}
