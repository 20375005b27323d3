package coord

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestKeyspaceParse(t *testing.T) {
	k := newKeyspace("prod")
	for _, tt := range []struct {
		key  string
		want parsedKey
	}{
		{"/samsa/prod/cluster-id", parsedKey{kind: kindClusterID}},
		{"/samsa/prod/brokers/12", parsedKey{kind: kindBroker, broker: 12}},
		{"/samsa/prod/topics/a.b-c_d", parsedKey{kind: kindTopic, topic: "a.b-c_d"}},
		{"/samsa/prod/partitions/orders/7", parsedKey{kind: kindPartition, topic: "orders", partition: 7}},
		{k.partition("x", 3), parsedKey{kind: kindPartition, topic: "x", partition: 3}},
		{k.abs(relBroker(5)), parsedKey{kind: kindBroker, broker: 5}},
		// Not ours, or malformed: ignored.
		{"/samsa/other/topics/a", parsedKey{}},
		{"/samsa/prod/producer-ids", parsedKey{}},
		{"/samsa/prod/controller/694d7b", parsedKey{}},
		{"/samsa/prod/brokers/-1", parsedKey{}},
		{"/samsa/prod/brokers/x", parsedKey{}},
		{"/samsa/prod/brokers/99999999999", parsedKey{}},
		{"/samsa/prod/topics/a/b", parsedKey{}},
		{"/samsa/prod/topics/", parsedKey{}},
		{"/samsa/prod/partitions/orders", parsedKey{}},
		{"/samsa/prod/partitions/orders/x", parsedKey{}},
		{"/samsa/prod/partitions/orders/1/2", parsedKey{}},
		{"/samsa/prod/partitions/orders/-1", parsedKey{}},
	} {
		if got := k.parse(tt.key); got != tt.want {
			t.Errorf("parse(%q) = %+v, want %+v", tt.key, got, tt.want)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"orders": true, "__consumer_offsets": true, "a.b-c": true, strings.Repeat("x", 249): true,
		"": false, ".": false, "..": false, "a/b": false, "a b": false, "ü": false, strings.Repeat("x", 250): false,
	} {
		if err := validName(name); (err == nil) != ok {
			t.Errorf("validName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

func TestZapToSlog(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var muted atomicBool
	zl := newZapLogger(l.With("component", "etcd"), zapcore.ErrorLevel, &muted.b).With(zap.String("member", "m1"))
	zl.Warn("chatty", zap.Int("n", 1))
	zl.Error("broken", zap.Error(context.Canceled), zap.Int("n", 2))
	out := buf.String()
	if strings.Contains(out, "chatty") {
		t.Errorf("warning passed the error threshold: %s", out)
	}
	for _, want := range []string{"level=ERROR", "msg=broken", "component=etcd", "member=m1", "n=2", `error="context canceled"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	buf.Reset()
	muted.b.Store(true)
	zl.Error("shutting down")
	if out := buf.String(); !strings.Contains(out, "level=DEBUG") {
		t.Errorf("muted error logged as %q, want debug level", out)
	}
}
