package broker

import (
	"errors"
	"log/slog"
	"testing"
)

// TestConfigRequestBudget: the memory-budget and connection settings parse
// with Kafka's names and map onto the protocol server's, Kafka's
// "unlimited" (Int.MaxValue, -1) included.
func TestConfigRequestBudget(t *testing.T) {
	c := DefaultConfig()
	p := c.protocolConfig(slog.Default())
	if p.MaxConnections != 0 || p.MaxConnectionsPerIP != 0 {
		t.Fatalf("defaults: max connections %d, per IP %d; want 0 (unlimited)", p.MaxConnections, p.MaxConnectionsPerIP)
	}
	if p.QueuedMaxBytes != 128<<20 || p.MaxQueuedBytesPerConnection != 16<<20 || c.FetchMaxBytes != 57671680 || c.ReplicaFetchResponseMaxBytes != 10485760 {
		t.Fatalf("defaults: %d %d %d %d", p.QueuedMaxBytes, p.MaxQueuedBytesPerConnection, c.FetchMaxBytes, c.ReplicaFetchResponseMaxBytes)
	}
	for k, v := range map[string]string{
		"fetch.max.bytes":                  "1048576",
		"replica.fetch.response.max.bytes": "2097152",
		"queued.max.request.bytes":         "-1",
		"queued.max.connection.bytes":      "4194304",
		"max.connections":                  "1000",
		"max.connections.per.ip":           "0",
		"max.connections.per.ip.overrides": "127.0.0.1:5, [::1]:7",
	} {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("Set(%s, %s): %v", k, v, err)
		}
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	p = c.protocolConfig(slog.Default())
	if c.FetchMaxBytes != 1<<20 || c.ReplicaFetchResponseMaxBytes != 2<<20 || p.QueuedMaxBytes != -1 || p.MaxQueuedBytesPerConnection != 4<<20 || p.MaxConnections != 1000 {
		t.Fatalf("after Set: %+v", p)
	}
	if p.MaxConnectionsPerIP >= 0 || p.MaxConnectionsPerIPOverrides["127.0.0.1"] != 5 || p.MaxConnectionsPerIPOverrides["::1"] != 7 {
		t.Fatalf("per IP %d, overrides %v; want none but 127.0.0.1:5 and ::1:7", p.MaxConnectionsPerIP, p.MaxConnectionsPerIPOverrides)
	}
	// As in Kafka, the budget must hold the largest request.
	for _, kv := range [][2]string{{"queued.max.request.bytes", "104857599"}, {"queued.max.request.bytes", "104857600"}, {"socket.request.max.bytes", "104857601"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("Set(%s, %s): %v", kv[0], kv[1], err)
		}
		err := c.validate()
		if want := c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes); errors.Is(err, ErrConfig) != want {
			t.Fatalf("queued.max.request.bytes %d, socket.request.max.bytes %d: %v, want an error %v", c.QueuedMaxRequestBytes, c.SocketRequestMaxBytes, err, want)
		}
	}
	for _, kv := range [][2]string{{"queued.max.request.bytes", "-1"}, {"socket.request.max.bytes", "104857600"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("max.connections.per.ip.overrides", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); !errors.Is(err, ErrConfig) {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v, want ErrConfig", err)
	}
	for k, v := range map[string]string{
		"fetch.max.bytes":                  "10",
		"queued.max.request.bytes":         "1000",
		"queued.max.connection.bytes":      "-2",
		"max.connections.per.ip":           "-1",
		"max.connections.per.ip.overrides": "127.0.0.1",
	} {
		if err := c.Set(k, v); !errors.Is(err, ErrConfig) {
			t.Errorf("Set(%s, %s): %v, want ErrConfig", k, v, err)
		}
	}
}
