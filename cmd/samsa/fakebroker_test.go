package main

// A minimal in-process Kafka broker for testing the admin commands' wiring
// (flags → kadm request → printed output) without a real cluster. It
// answers ApiVersions itself and every other request with a handler chosen
// by the test, and records the requests it got.

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fakeHandler func(kmsg.Request) kmsg.Response

type fakeBroker struct {
	t        *testing.T
	ln       net.Listener
	host     string
	port     int32
	handlers map[int16]fakeHandler

	mu       sync.Mutex
	requests []kmsg.Request // guarded by mu
	conns    []net.Conn     // guarded by mu

	wg sync.WaitGroup
}

// startFakeBroker serves handlers on a loopback port until the test ends.
func startFakeBroker(t *testing.T, handlers map[int16]fakeHandler) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	b := &fakeBroker{t: t, ln: ln, host: host, port: int32(port), handlers: handlers}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *fakeBroker) addr() string { return b.ln.Addr().String() }

// got returns the recorded requests with the given key.
func (b *fakeBroker) got(key int16) []kmsg.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []kmsg.Request
	for _, r := range b.requests {
		if r.Key() == key {
			out = append(out, r)
		}
	}
	return out
}

func (b *fakeBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer c.Close()
			b.serve(c)
		}()
	}
}

func (b *fakeBroker) serve(c net.Conn) {
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(c, sizeBuf[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(sizeBuf[:])
		if size > 1<<20 {
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		resp, err := b.handle(frame)
		if err != nil {
			b.t.Errorf("fake broker: %v", err)
			return
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// handle decodes one request frame and returns the whole response frame.
func (b *fakeBroker) handle(frame []byte) ([]byte, error) {
	r := kbin.Reader{Src: frame}
	key := r.Int16()
	version := r.Int16()
	correlationID := r.Int32()
	r.NullableString() // client ID
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, errors.New("unknown request key " + strconv.Itoa(int(key)))
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		for n := r.Uvarint(); n > 0; n-- { // header tagged fields
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if !r.Ok() {
		return nil, errors.New("short request header")
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.requests = append(b.requests, req)
	b.mu.Unlock()

	var resp kmsg.Response
	if key == kmsg.ApiVersions.Int16() {
		resp = b.apiVersions(req)
	} else if h, ok := b.handlers[key]; ok {
		resp = h(req)
	} else {
		return nil, errors.New("no handler for request key " + strconv.Itoa(int(key)))
	}
	resp.SetVersion(version)

	out := make([]byte, 4, 64)
	out = binary.BigEndian.AppendUint32(out, uint32(correlationID))
	// ApiVersions responses always use the non-flexible header.
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// apiVersions advertises ApiVersions and every key with a handler, at all
// versions kmsg knows.
func (b *fakeBroker) apiVersions(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	keys := []int16{kmsg.ApiVersions.Int16()}
	for k := range b.handlers {
		keys = append(keys, k)
	}
	for _, k := range keys {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey = k
		ak.MinVersion = 0
		ak.MaxVersion = kmsg.RequestForKey(k).MaxVersion()
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	return resp
}

// fakeCluster is what the fake broker reports in Metadata and
// DescribeConfigs.
type fakeCluster struct {
	// liveBrokers are reported as brokers; all point at the fake itself.
	liveBrokers []int32
	topics      []fakeTopic
}

type fakeTopic struct {
	name     string
	id       [16]byte
	internal bool
	parts    []partitionDescription
	configs  []kadmConfig
}

// kadmConfig is one DescribeConfigs entry.
type kadmConfig struct {
	name, value string
	source      kmsg.ConfigSource
}

// handlers returns Metadata and DescribeConfigs handlers serving c from b.
func (c *fakeCluster) handlers(b **fakeBroker) map[int16]fakeHandler {
	return map[int16]fakeHandler{
		kmsg.Metadata.Int16(): func(r kmsg.Request) kmsg.Response {
			req := r.(*kmsg.MetadataRequest)
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			resp.ClusterID = kmsg.StringPtr("fake")
			resp.ControllerID = c.liveBrokers[0]
			for _, id := range c.liveBrokers {
				br := kmsg.NewMetadataResponseBroker()
				br.NodeID, br.Host, br.Port = id, (*b).host, (*b).port
				resp.Brokers = append(resp.Brokers, br)
			}
			want := map[string]bool{}
			for _, t := range req.Topics {
				want[*t.Topic] = true
			}
			for _, ft := range c.topics {
				if req.Topics != nil && !want[ft.name] {
					continue
				}
				delete(want, ft.name)
				t := kmsg.NewMetadataResponseTopic()
				t.Topic, t.TopicID, t.IsInternal = kmsg.StringPtr(ft.name), ft.id, ft.internal
				for _, p := range ft.parts {
					mp := kmsg.NewMetadataResponseTopicPartition()
					mp.Partition, mp.Leader = p.Partition, p.Leader
					mp.Replicas, mp.ISR, mp.OfflineReplicas = p.Replicas, p.ISR, p.Offline
					t.Partitions = append(t.Partitions, mp)
				}
				resp.Topics = append(resp.Topics, t)
			}
			for name := range want {
				t := kmsg.NewMetadataResponseTopic()
				t.Topic = kmsg.StringPtr(name)
				t.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
				resp.Topics = append(resp.Topics, t)
			}
			return resp
		},
		kmsg.DescribeConfigs.Int16(): func(r kmsg.Request) kmsg.Response {
			req := r.(*kmsg.DescribeConfigsRequest)
			resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
			for _, rr := range req.Resources {
				res := kmsg.NewDescribeConfigsResponseResource()
				res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
				res.ErrorCode = 3
				for _, ft := range c.topics {
					if ft.name != rr.ResourceName {
						continue
					}
					res.ErrorCode = 0
					for _, fc := range ft.configs {
						cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
						cfg.Name, cfg.Value, cfg.Source = fc.name, kmsg.StringPtr(fc.value), fc.source
						res.Configs = append(res.Configs, cfg)
					}
				}
				resp.Resources = append(resp.Resources, res)
			}
			return resp
		},
	}
}
