package coord

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newZapLogger returns a zap logger, for etcd's server and client, that
// forwards entries at or above min to the slog handler of l. etcd logs a
// great deal at info and warn level (every retry, every election), so
// samsa passes zapcore.ErrorLevel by default.
//
// Once *muted is true (nil: never), entries go to slog at debug level
// whatever their level: etcd reports its own orderly shutdown as errors
// ("mux: server closed", "use of closed network connection").
func newZapLogger(l *slog.Logger, min zapcore.Level, muted *atomic.Bool) *zap.Logger {
	if l == nil {
		l = slog.Default()
	}
	return zap.New(&slogCore{handler: l.Handler(), min: min, muted: muted})
}

// slogCore is a zapcore.Core writing to a slog.Handler. It is immutable:
// With returns a copy.
type slogCore struct {
	handler slog.Handler
	min     zapcore.Level
	attrs   []slog.Attr  // from With
	muted   *atomic.Bool // may be nil
}

var _ zapcore.Core = (*slogCore)(nil)

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (c *slogCore) level(l zapcore.Level) slog.Level {
	if c.muted != nil && c.muted.Load() {
		return slog.LevelDebug
	}
	return slogLevel(l)
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.handler.Enabled(context.Background(), c.level(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	next := *c
	next.attrs = append(slices.Clip(c.attrs), fieldAttrs(fields)...)
	return &next
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, c.level(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(c.attrs...)
	r.AddAttrs(fieldAttrs(fields)...)
	return c.handler.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// fieldAttrs converts zap fields to slog attributes, in a stable order.
func fieldAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	return attrs
}
