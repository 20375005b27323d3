package test

// The web console (package web) in a real headless browser: Debian's
// chromium driven by chromedp over the DevTools protocol. Like kcat, the
// browser is a tool the test needs on PATH; .ci/run installs it (Debian's
// chromium package) when it is missing, and the test does not skip
// without it.

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// chromiumBinary returns the browser's path.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("this test needs a headless browser (chromium) on PATH; it does not skip without it. " +
		"Install it with `apt-get install chromium` (.ci/run does)")
	return ""
}

// browser starts a headless chromium and returns a context to drive it
// with; it stops with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumBinary(t)),
		chromedp.NoSandbox, // the suite may run as root, where chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// evalIn evaluates a JavaScript expression in the page, with a bound on
// how long the browser may take.
func evalIn[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// navigate loads u in the browser and waits for its main part.
func navigate(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	nctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(nctx, chromedp.Navigate(u), chromedp.WaitReady(chromedp.ID("main"))); err != nil {
		t.Fatalf("loading %s: %v", u, err)
	}
}

// The health colours of console.css, as the browser computes them.
const (
	consoleGreen = "rgb(31, 138, 76)"
	consoleRed   = "rgb(197, 48, 48)"
)

// TestConsoleInBrowser loads broker 1's console in headless chromium: the
// overview lists the three brokers and a topic the test creates, with its
// throughput while a producer runs; the topic's page explains each
// replica; the consumer group's page shows its member and lag; when the
// topic's two replicas (brokers 2 and 3) stop, its partitions turn red
// on the open page (which refreshes itself), their ISR history shows the
// change that took them offline, and the brokers show as not registered, and they turn green again when the brokers return. On a
// phone-sized screen no page is wider than the screen.
func TestConsoleInBrowser(t *testing.T) {
	bctx := browser(t)
	c := StartCluster(t, 3)
	base := c.Broker(1).Proc.MetricsURL
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// A topic on brokers 2 and 3 only, so that stopping them takes it
	// offline while broker 1 serves the console.
	const topic, group = "console-topic", "console-group"
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, replicas := range [][]int32{{2, 3}, {3, 2}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	admin := c.Client()
	defer admin.Close()
	resp, err := req.RequestWith(ctx, admin)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: %v %+v", topic, err, resp)
	}
	producer := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer producer.Close()
	const records = 50
	for i := range records {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A group member that consumes half and commits, and stays.
	consumer := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ClientID("console-consumer"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	defer consumer.Close()
	var consumed []*kgo.Record
	for len(consumed) < records/2 {
		fs := consumer.PollRecords(ctx, records/2-len(consumed))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		consumed = append(consumed, fs.Records()...)
	}
	if err := consumer.CommitRecords(ctx, consumed...); err != nil {
		t.Fatal(err)
	}

	// The overview: three brokers, the topic healthy and green.
	navigate(t, bctx, base+"/")
	for _, id := range c.IDs() {
		if n, err := evalIn[int](bctx, fmt.Sprintf(`document.querySelectorAll('#broker-%d[data-state="registered"]').length`, id)); err != nil || n != 1 {
			t.Errorf("overview: broker %d registered rows = %d (%v), want 1", id, n, err)
		}
	}
	topicHealth := func() (string, error) {
		return evalIn[string](bctx, `(function(){var r=document.getElementById('topic-`+topic+`');return r?r.dataset.health:'missing'})()`)
	}
	if h, err := topicHealth(); err != nil || h != "healthy" {
		t.Fatalf("overview: topic health %q (%v), want healthy", h, err)
	}

	// Throughput: with a producer running, the open page (refreshing
	// itself) shows a rate of records in for the topic.
	stopLoad := make(chan struct{})
	var load sync.WaitGroup
	loaded := 0 // records the load produced, read once it stopped
	load.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			default:
			}
			if producer.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "load-%d", i)}).FirstErr() == nil {
				loaded++
			}
		}
	})
	WaitFor(t, 60*time.Second, func() error {
		cell, err := evalIn[string](bctx, `document.querySelector('#topic-`+topic+` td:nth-child(5)').textContent`)
		if err != nil {
			return err
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64); err != nil || v <= 0 {
			return fmt.Errorf("records in/s of %s: %q, want a positive rate", topic, cell)
		}
		return nil
	})
	close(stopLoad)
	load.Wait()

	// The topic's page explains each replica of each partition.
	navigate(t, bctx, base+"/topics/"+topic)
	for p := range 2 {
		text, err := evalIn[string](bctx, fmt.Sprintf(`document.getElementById('explain-%d').textContent`, p))
		if err != nil || !strings.Contains(text, "high watermark") || !strings.Contains(text, "in ISR") {
			t.Errorf("explain of partition %d: %q (%v), want the leader's account with a follower in the ISR", p, text, err)
		}
	}

	// The group's page: its member, and the lag of what it did not
	// commit, which its coordinator also exports as a metric.
	wantLag := records + loaded - len(consumed)
	navigate(t, bctx, base+"/groups/"+group)
	WaitFor(t, 30*time.Second, func() error {
		text, err := evalIn[string](bctx, `document.getElementById('members').textContent`)
		if err != nil {
			return err
		}
		if !strings.Contains(text, "console-consumer") {
			return fmt.Errorf("members: %q, want the console-consumer client", text)
		}
		lag, err := evalIn[int](bctx, `Array.from(document.querySelectorAll('#lag tr[data-lag]')).reduce(function(s,r){return s+Number(r.dataset.lag)},0)`)
		if err != nil {
			return err
		}
		if lag != wantLag {
			return fmt.Errorf("lag over the partitions = %d, want %d (%d records, %d committed)", lag, wantLag, records+loaded, len(consumed))
		}
		return nil
	})
	WaitFor(t, 30*time.Second, func() error {
		v, err := clusterMetricSum(t, c, c.IDs(), "samsa_consumer_group_lag_records", map[string]string{"group": group})
		if err == nil && v != float64(wantLag) {
			err = fmt.Errorf("samsa_consumer_group_lag_records{group=%q} summed over the brokers = %v, want %d", group, v, wantLag)
		}
		return err
	})

	// Its replicas stop: on the open topic page, both partitions turn red.
	navigate(t, bctx, base+"/topics/"+topic)
	partitionState := func(p int) (health, colour string, err error) {
		type state struct{ Health, Colour string }
		s, err := evalIn[state](bctx, fmt.Sprintf(`(function(){var r=document.getElementById('partition-%d');
			if(!r){return {Health:'missing',Colour:''}}
			return {Health:r.dataset.health,Colour:getComputedStyle(r.querySelector('.dot')).backgroundColor}})()`, p))
		return s.Health, s.Colour, err
	}
	// partitionsAre checks both partitions' health and dot colour.
	partitionsAre := func(health, colour string) error {
		for p := range 2 {
			h, col, err := partitionState(p)
			if err != nil {
				return err
			}
			if h != health || col != colour {
				return fmt.Errorf("partition %d: %q %q, want %s and %s", p, h, col, health, colour)
			}
		}
		return nil
	}
	for p := range 2 {
		if h, col, err := partitionState(p); err != nil || h != "healthy" || col != consoleGreen {
			t.Fatalf("partition %d before the stop: %q %q (%v), want healthy and green %s", p, h, col, err, consoleGreen)
		}
	}
	c.Stop(2)
	c.Stop(3)
	WaitFor(t, 60*time.Second, func() error { return partitionsAre("offline", consoleRed) })
	// The partition's ISR history tells how it came to be offline.
	WaitFor(t, 30*time.Second, func() error {
		text, err := evalIn[string](bctx, `(function(){var h=document.getElementById('history-0');return h?h.textContent:''})()`)
		if err == nil && !strings.Contains(text, "no eligible ISR member: partition offline") {
			err = fmt.Errorf("history of partition 0: %q, want the change that took it offline", text)
		}
		return err
	})
	navigate(t, bctx, base+"/")
	for _, id := range []int32{2, 3} {
		if n, err := evalIn[int](bctx, fmt.Sprintf(`document.querySelectorAll('#broker-%d[data-state="missing"]').length`, id)); err != nil || n != 1 {
			t.Errorf("overview with broker %d stopped: missing rows = %d (%v), want 1", id, n, err)
		}
	}
	if h, err := topicHealth(); err != nil || h != "offline" {
		t.Errorf("overview: topic health %q (%v) with its replicas stopped, want offline", h, err)
	}

	// They return: green again, on the page as it refreshes itself.
	navigate(t, bctx, base+"/topics/"+topic)
	c.Restart(2)
	c.Restart(3)
	WaitFor(t, 90*time.Second, func() error { return partitionsAre("healthy", consoleGreen) })

	// A phone: no page is wider than a 375-pixel screen (wide tables
	// scroll inside their box).
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(375, 740)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/topics/" + topic, "/groups", "/groups/" + group} {
		navigate(t, bctx, base+path)
		if w, err := evalIn[int](bctx, `document.documentElement.scrollWidth`); err != nil || w > 375 {
			t.Errorf("%s on a 375 px screen is %d px wide (%v), want ≤ 375", path, w, err)
		}
	}

	// Unknown pages are 404s, and the console's pages are not cached.
	for path, want := range map[string]int{"/topics/no-such-topic": http.StatusNotFound, "/groups/no-such-group": http.StatusNotFound, "/": http.StatusOK} {
		code, body, err := httpStatus(base + path)
		if err != nil || code != want {
			t.Errorf("GET %s: %d (%v), want %d: %.200s", path, code, err, want, body)
		}
	}
}
