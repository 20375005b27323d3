package test

// A deleted partition's log is renamed at once and removed in the
// background (issue 15): removing a large log must neither hold back the
// broker's view (and with it every admin answer) nor keep a partition
// re-created under the same name from its directory.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/broker"
	klog "github.com/samsa-io/samsa/internal/log"
)

// blockedRemoveFS holds every RemoveAll until released.
type blockedRemoveFS struct {
	klog.OSFS
	release chan struct{}
	mu      sync.Mutex
	removes []string
}

func (f *blockedRemoveFS) RemoveAll(name string) error {
	f.mu.Lock()
	f.removes = append(f.removes, name)
	f.mu.Unlock()
	<-f.release
	return f.OSFS.RemoveAll(name)
}

func TestDeletedLogRemovedInBackground(t *testing.T) {
	fsys := &blockedRemoveFS{release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(fsys.release)
		}
	}
	defer release() // before the broker's Close, which waits for removals
	b := StartBroker(t, func(c *broker.Config) { c.LogFS = fsys })
	ctx := testContext(t, time.Minute)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	const topic = "deleted-in-background"
	// Deleted and created again while the old log's removal is held: both
	// answer, and the new partition starts empty in its own directory.
	createFillDelete(ctx, t, b.Addr, cl, adm, topic, 1)
	recreatedEmpty(ctx, t, b.Addr, adm, topic)
	logs := filepath.Join(b.Config.DataDir, "logs")
	tombs := func() []string {
		entries, err := os.ReadDir(logs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if strings.Contains(e.Name(), "~") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if got := tombs(); len(got) != 1 || !strings.HasPrefix(got[0], topic+"-0~") {
		t.Fatalf("retired directories %v, want the old %s-0's", got, topic)
	}

	release()
	WaitFor(t, 30*time.Second, func() error {
		if got := tombs(); len(got) > 0 {
			return fmt.Errorf("retired directories still there: %v", got)
		}
		return nil
	})

	// A retired directory left by a crash goes at the next start.
	left := filepath.Join(logs, topic+"-7~deleted-1")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Restart(t)
	WaitFor(t, 30*time.Second, func() error {
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			return fmt.Errorf("retired directory after a restart: %v", err)
		}
		return nil
	})
}

// A topic with a name near Kafka's limit (249) still loses its records
// when deleted: the retired directory's name must fit the file system's
// 255 bytes, or a re-created topic would find the old log.
func TestDeletedLongNameNotRevived(t *testing.T) {
	b := StartBroker(t)
	ctx := testContext(t, time.Minute)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	topic := strings.Repeat("x", 240)
	createFillDelete(ctx, t, b.Addr, cl, adm, topic, 3)
	recreatedEmpty(ctx, t, b.Addr, adm, topic)
}

// createFillDelete creates a topic of one partition, writes n records and
// deletes it.
func createFillDelete(ctx context.Context, t *testing.T, addr string, cl *kgo.Client, adm *kadm.Client, topic string, n int) {
	t.Helper()
	e2eCreateTopic(ctx, t, addr, topic, 1, nil)
	for range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("old")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	resp, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// recreatedEmpty creates the topic again and checks that it starts empty.
func recreatedEmpty(ctx context.Context, t *testing.T, addr string, adm *kadm.Client, topic string) {
	t.Helper()
	e2eCreateTopic(ctx, t, addr, topic, 1, nil)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("re-created topic's end offset %d (%v), want 0: the deleted records came back", o.Offset, o.Err)
	}
}

// halfRemoveFS fails every rename to a retired name, and every RemoveAll
// of a partition directory after removing only its partition.metadata.
type halfRemoveFS struct {
	klog.OSFS
}

func (halfRemoveFS) Rename(oldpath, newpath string) error {
	if strings.Contains(newpath, "~") {
		return errors.New("injected rename failure")
	}
	return klog.OSFS{}.Rename(oldpath, newpath)
}

func (halfRemoveFS) RemoveAll(name string) error {
	if err := os.Remove(filepath.Join(name, "partition.metadata")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return errors.New("injected removal failure")
}

// A deleted partition whose log could neither be renamed nor fully removed
// (its partition.metadata went first) must not lend its records to the
// topic re-created under its name.
func TestDeletedHalfRemovedNotRevived(t *testing.T) {
	b := StartBroker(t, func(c *broker.Config) { c.LogFS = halfRemoveFS{} })
	ctx := testContext(t, time.Minute)
	cl := newKgoClient(t, b.Addr)
	adm := kadm.NewClient(cl)
	const topic = "half-removed"
	createFillDelete(ctx, t, b.Addr, cl, adm, topic, 3)
	// The re-created partition cannot open while the old log cannot be
	// removed; it must not serve the old records either.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("create again: %v", err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p := raw.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if p.ErrorCode == 0 && p.Offset != 0 {
		t.Fatalf("re-created topic's end offset %d, want 0 (or not served): the deleted records came back", p.Offset)
	}
}
