package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/broker"
)

// A compacted topic keeps only the latest value of each key once its
// segments are cleaned: keys overwritten many times, some deleted with a
// tombstone (kept for delete.retention.ms, then gone), read back by a
// consumer that sees each key once with its latest value, at the offset it
// was written. Once with uncompressed batches, once with franz-go's
// default compression (snappy), whose batches are rewritten uncompressed
// when they lose records.
func TestCompactedTopic(t *testing.T) {
	for _, codec := range []struct {
		name string
		c    kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"snappy", kgo.SnappyCompression()}} {
		t.Run(codec.name, func(t *testing.T) { testCompactedTopic(t, codec.c) })
	}
}

func testCompactedTopic(t *testing.T, codec kgo.CompressionCodec) {
	b := StartBroker(t, func(cfg *broker.Config) { cfg.CleanerBackoff = 100 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.DefaultProduceTopic("compacted"),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy":      kadm.StringPtr("compact"),
		"segment.bytes":       kadm.StringPtr("4096"),
		"delete.retention.ms": kadm.StringPtr("2000"),
	}, "compacted"); err != nil {
		t.Fatal(err)
	}
	const keys, rounds = 20, 30
	latest := map[string]string{}
	latestOffset := map[string]int64{}
	for r := range rounds {
		for k := range keys {
			key := fmt.Sprintf("key-%02d", k)
			rec := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("%s=round-%02d", key, r))}
			if r == rounds-1 && k%5 == 0 {
				rec.Value = nil // a tombstone
			}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			latest[key], latestOffset[key] = string(rec.Value), rec.Offset
		}
	}
	// Enough writes of one more key to roll the tombstones out of the
	// active segment, which is never cleaned.
	for i := range 100 {
		rec := &kgo.Record{Key: []byte("filler"), Value: []byte(fmt.Sprintf("filler=%03d", i))}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		latest["filler"], latestOffset["filler"] = string(rec.Value), rec.Offset
	}
	// A keyless record is refused on a compacted topic.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); err == nil {
		t.Fatal("a record without a key was accepted on a compacted topic")
	}
	readAll := func() (map[string][]string, map[string]int64, int) {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ConsumeTopics("compacted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		end, err := kadm.NewClient(c).ListEndOffsets(ctx, "compacted")
		if err != nil {
			t.Fatal(err)
		}
		hw, _ := end.Lookup("compacted", 0)
		got, at := map[string][]string{}, map[string]int64{}
		n := 0
		for last := int64(-1); last < hw.Offset-1; {
			fs := c.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read up to offset %d of %d", last, hw.Offset)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got[string(r.Key)] = append(got[string(r.Key)], string(r.Value))
				at[string(r.Key)] = r.Offset
				last = r.Offset
				n++
			})
		}
		return got, at, n
	}
	// Cleaning happens in the background: wait until only the active
	// segment can still hold superseded values, then check every key.
	WaitFor(t, 30*time.Second, func() error {
		got, at, n := readAll()
		for key, want := range latest {
			vals := got[key]
			if want == "" {
				// Tombstoned: the tombstone may still be there, or gone.
				if len(vals) > 1 && vals[len(vals)-1] != "" {
					return fmt.Errorf("%s: %v after its tombstone", key, vals)
				}
				continue
			}
			if len(vals) == 0 || vals[len(vals)-1] != want || at[key] != latestOffset[key] {
				return fmt.Errorf("%s: read %v (last at %d), want %q at %d", key, vals, at[key], want, latestOffset[key])
			}
		}
		// At most one record per key plus what the active segment holds
		// (up to the 100 filler writes).
		if n > keys+1+100 {
			return fmt.Errorf("%d of %d records left after compaction", n, keys*rounds+100)
		}
		return nil
	})
	// Past delete.retention.ms the tombstones go too.
	WaitFor(t, 30*time.Second, func() error {
		got, _, _ := readAll()
		for key, want := range latest {
			if want == "" && len(got[key]) > 0 {
				return fmt.Errorf("%s still has %q", key, got[key])
			}
		}
		return nil
	})
	t.Logf("%d records written; compaction left the latest per key and dropped the tombstones", keys*rounds)
}
