package log

import (
	"log/slog"
	"math"
	"time"
)

// Config is a partition log's configuration: the segment, retention and
// flush settings of Kafka's topic configuration, plus the seams tests use.
// Start from DefaultConfig. A zero numeric field means "the default", so
// Config{} behaves like DefaultConfig(); to ask for "as small as possible"
// use 1 (for example IndexIntervalBytes = 1 indexes every batch).
type Config struct {
	// SegmentBytes (segment.bytes): roll when an append would make the
	// active segment exceed it. An append larger than this goes alone into
	// a fresh segment.
	SegmentBytes int64
	// SegmentMs (segment.ms): roll when the active segment's first batch is
	// older than this (measured as in Kafka: between the timestamps of the
	// first and the incoming batch, or by the broker clock when batches
	// carry no timestamps).
	SegmentMs int64
	// SegmentIndexBytes (segment.index.bytes): the largest offset index or
	// time index of a segment; roll when either is full.
	SegmentIndexBytes int32
	// IndexIntervalBytes (index.interval.bytes): bytes of batches between two
	// entries of the sparse offset index.
	IndexIntervalBytes int32
	// RetentionBytes (retention.bytes): delete the oldest segments while the
	// log is larger than this. -1 is unlimited.
	RetentionBytes int64
	// RetentionMs (retention.ms): delete segments whose largest timestamp is
	// older than this. -1 is unlimited.
	RetentionMs int64
	// FlushMessages (flush.messages): <= 1 is samsa's sync mode (the broker
	// calls Flush before acknowledging); larger values are Kafka's
	// page-cache mode, where NeedsFlush asks for a flush every
	// FlushMessages messages.
	FlushMessages int64
	// FlushMs (flush.ms): in page-cache mode, the longest time appended data
	// stays unflushed.
	FlushMs int64
	// ProducerIDExpirationMs (producer.id.expiration.ms): forget idempotent
	// producers whose last batch is older than this.
	ProducerIDExpirationMs int64

	// FS is the file system; default OSFS. SetConfig cannot change it.
	FS FS
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives recovery and retention events; default slog.Default().
	Logger *slog.Logger
	// OnFlush, if set, is told how long each flush round's writes to the
	// device (fsyncs and checkpoints) took, for metrics; it must be quick.
	OnFlush func(time.Duration)
}

// Kafka's defaults, except FlushMessages: samsa acknowledges only fsync'd
// data unless a topic opts into page-cache mode.
const (
	DefaultSegmentBytes           = 1 << 30
	DefaultSegmentMs              = 7 * 24 * 60 * 60 * 1000
	DefaultSegmentIndexBytes      = 10 << 20
	DefaultIndexIntervalBytes     = 4096
	DefaultRetentionBytes         = -1
	DefaultRetentionMs            = 7 * 24 * 60 * 60 * 1000
	DefaultFlushMessages          = 1
	DefaultFlushMs                = math.MaxInt64
	DefaultProducerIDExpirationMs = 86400000
)

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           DefaultSegmentBytes,
		SegmentMs:              DefaultSegmentMs,
		SegmentIndexBytes:      DefaultSegmentIndexBytes,
		IndexIntervalBytes:     DefaultIndexIntervalBytes,
		RetentionBytes:         DefaultRetentionBytes,
		RetentionMs:            DefaultRetentionMs,
		FlushMessages:          DefaultFlushMessages,
		FlushMs:                DefaultFlushMs,
		ProducerIDExpirationMs: DefaultProducerIDExpirationMs,
		FS:                     OSFS{},
		Now:                    time.Now,
		Logger:                 slog.Default(),
	}
}

// withDefaults replaces zero (and nonsensical) fields by their defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	// Positions in the offset index are uint32 and Kafka caps segment.bytes
	// at an int32; keep the same bound.
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	// An index must hold at least one entry of each kind.
	c.SegmentIndexBytes = max(c.SegmentIndexBytes, timeIndexEntrySize)
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = d.RetentionBytes
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = d.RetentionMs
	}
	if c.FlushMessages == 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs <= 0 {
		c.FlushMs = d.FlushMs
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	if c.FS == nil {
		c.FS = d.FS
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	return c
}
