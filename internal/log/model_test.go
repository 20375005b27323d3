package log

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
)

var modelSeed = flag.Int64("model.seed", -1, "run TestModel with this seed only")

// TestModel drives the log with random operations — appends (leader and
// producer batches), flushes, truncations, retention, start offset moves,
// new epochs, crashes on MemFS and clean reopens — and after every step
// compares it with a model: the list of batches it must hold. A failure
// names the seed; rerun it with -run TestModel -model.seed=N.
func TestModel(t *testing.T) {
	seeds, steps := 24, 400
	if testing.Short() {
		seeds, steps = 8, 200
	}
	var list []int64
	if *modelSeed >= 0 {
		list = []int64{*modelSeed}
	} else {
		for s := range seeds {
			list = append(list, int64(s))
		}
	}
	for _, seed := range list {
		for _, useOS := range []bool{false, true} {
			if useOS && seed%4 != 0 {
				continue // OSFS runs are slower (real fsyncs) and cannot crash
			}
			name := fmt.Sprintf("seed=%d/memfs", seed)
			if useOS {
				name = fmt.Sprintf("seed=%d/osfs", seed)
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runModel(t, uint64(seed), steps, useOS)
			})
		}
	}
}

type modelBatch struct {
	base, next int64
	epoch      int32
	producerID int64
	lastSeq    int32
	bytes      []byte
}

type logModel struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	env     testEnv
	cfg     Config
	clock   *fakeClock
	l       *Log
	batches []modelBatch // the visible batches: from the one holding start to the LEO
	history []modelBatch // every batch not truncated, also those below start
	start   int64
	leo     int64
	epoch   int32           // the leader epoch appends use
	nextSeq map[int64]int32 // per producer id
	// startMoved: retention or a start offset move happened; producer state
	// of producers whose batches went with it may then be stale.
	startMoved bool
}

func runModel(t *testing.T, seed uint64, steps int, useOS bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	clock := newFakeClock()
	var env testEnv
	if useOS {
		env = testEnv{name: "osfs", fs: OSFS{}, dir: t.TempDir() + "/p"}
	} else {
		m := NewMemFS(seed)
		env = testEnv{name: "memfs", fs: m, mem: m, dir: "/p"}
	}
	cfg := testConfig(env.fs, clock)
	cfg.SegmentBytes = []int64{300, 1500, 1 << 20}[rng.IntN(3)]
	cfg.IndexIntervalBytes = []int32{1, 100, 4096}[rng.IntN(3)]
	cfg.SegmentIndexBytes = []int32{36, 10 << 20}[rng.IntN(2)]
	m := &logModel{t: t, seed: seed, rng: rng, env: env, cfg: cfg, clock: clock, nextSeq: map[int64]int32{}}
	m.l = mustOpen(t, env.dir, cfg)
	defer func() { m.l.Close() }()
	if err := m.l.AssignEpoch(0); err != nil {
		m.fatalf("AssignEpoch: %v", err)
	}
	for step := range steps {
		op := m.step()
		m.check(fmt.Sprintf("step %d (%s)", step, op))
	}
}

func (m *logModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d: %s", m.seed, fmt.Sprintf(format, args...))
}

func (m *logModel) step() string {
	switch r := m.rng.IntN(100); {
	case r < 45:
		m.append()
		return "append"
	case r < 50:
		m.duplicate()
		return "duplicate"
	case r < 65:
		if err := m.l.Flush(); err != nil {
			m.fatalf("Flush: %v", err)
		}
		return "flush"
	case r < 71:
		m.truncate()
		return "truncate"
	case r < 76:
		m.retention()
		return "retention"
	case r < 79:
		m.advanceStart()
		return "advance start"
	case r < 83:
		m.epoch += 1 + int32(m.rng.IntN(2))
		if err := m.l.AssignEpoch(m.epoch); err != nil {
			m.fatalf("AssignEpoch(%d): %v", m.epoch, err)
		}
		return "new epoch"
	case r < 92 && m.env.mem != nil:
		m.crash()
		return "crash"
	default:
		m.reopen()
		return "reopen"
	}
}

func (m *logModel) append() {
	if m.startMoved {
		// Producer state rebuilt after a crash may lag behind when the
		// batches it came from went with retention; follow the log.
		for pid := range int64(3) {
			if st, ok := m.l.Producer(pid); ok {
				m.nextSeq[pid] = st.LastSequence + 1
			}
		}
	}
	n := 1 + m.rng.IntN(3)
	var req [][]byte
	var specs []batchSpec
	for range n {
		s := newBatch(1+m.rng.IntN(5), m.rng.IntN(300), m.clock.Ms()+m.rng.Int64N(1000)).filled(byte(m.rng.IntN(256)))
		if pid := int64(m.rng.IntN(4)); pid > 0 && pid < 3 {
			s = s.producer(pid, 0, m.nextSeq[pid])
			m.nextSeq[pid] += int32(s.records)
		}
		specs = append(specs, s)
		req = append(req, s.encode())
	}
	info, err := m.l.Append(concat(req...), m.epoch)
	if err != nil {
		m.fatalf("Append: %v", err)
	}
	if info.FirstOffset != m.leo {
		m.fatalf("Append at %d, want %d", info.FirstOffset, m.leo)
	}
	for i, b := range req {
		mb := modelBatch{base: m.leo, next: m.leo + int64(specs[i].records), epoch: m.epoch,
			producerID: specs[i].producerID, lastSeq: specs[i].baseSeq + int32(specs[i].records) - 1,
			bytes: stored(b, m.leo, m.epoch)}
		m.batches = append(m.batches, mb)
		m.history = append(m.history, mb)
		m.leo = mb.next
	}
	if info.LastOffset != m.leo-1 {
		m.fatalf("Append last offset %d, want %d", info.LastOffset, m.leo-1)
	}
}

// duplicate resends a producer's last batch, which the log must answer with
// its original offsets.
func (m *logModel) duplicate() {
	pid := int64(1 + m.rng.IntN(2))
	var last *modelBatch
	for i := range m.batches {
		if m.batches[i].producerID == pid {
			last = &m.batches[i]
		}
	}
	st, ok := m.l.Producer(pid)
	if last == nil || !ok || st.LastOffset != last.next-1 {
		return
	}
	resend := bytes.Clone(last.bytes)
	info, err := m.l.Append(resend, m.epoch)
	if !errors.Is(err, ErrDuplicateSequence) || info.FirstOffset != last.base || info.LastOffset != last.next-1 {
		m.fatalf("resent batch %d..%d: %v, %+v", last.base, last.next-1, err, info)
	}
}

func (m *logModel) truncate() {
	if m.leo == m.start {
		return
	}
	offset := m.start + m.rng.Int64N(m.leo-m.start+1)
	if err := m.l.Truncate(offset); err != nil {
		m.fatalf("Truncate(%d): %v", offset, err)
	}
	if offset <= m.start {
		m.batches, m.history, m.start, m.leo = nil, nil, offset, offset
		m.startMoved = true
		for pid := range m.nextSeq {
			m.nextSeq[pid] = 0
		}
		return
	}
	m.cutAt(offset)
}

// cutAt removes the batches at and after offset (> start); a straddling
// batch goes whole. If nothing visible stays, the log restarts empty at its
// start offset.
func (m *logModel) cutAt(offset int64) {
	keep := 0
	for keep < len(m.batches) && m.batches[keep].next <= offset {
		keep++
	}
	m.batches = m.batches[:keep]
	m.leo = m.start
	if keep > 0 {
		m.leo = m.batches[keep-1].next
	}
	cut := 0
	for cut < len(m.history) && m.history[cut].next <= offset {
		cut++
	}
	m.history = m.history[:cut]
	if keep == 0 {
		m.history = nil // a full truncation forgets everything
	}
	for pid := range m.nextSeq {
		m.nextSeq[pid] = 0
		for _, b := range m.history {
			if b.producerID == pid {
				m.nextSeq[pid] = b.lastSeq + 1
			}
		}
	}
}

func (m *logModel) retention() {
	cfg := m.cfg
	cfg.RetentionBytes = m.rng.Int64N(6000) + 1
	m.l.SetConfig(cfg)
	if _, err := m.l.EnforceRetention(); err != nil {
		m.fatalf("EnforceRetention: %v", err)
	}
	m.l.SetConfig(m.cfg)
	m.setStart(m.l.StartOffset(), true)
}

func (m *logModel) advanceStart() {
	offset := m.start + m.rng.Int64N(m.leo-m.start+1)
	if err := m.l.AdvanceStartOffset(offset); err != nil {
		m.fatalf("AdvanceStartOffset(%d): %v", offset, err)
	}
	m.setStart(max(m.start, offset), false)
}

// setStart records a new log start offset; atBoundary demands that it fall
// on a batch boundary (retention deletes whole segments).
func (m *logModel) setStart(start int64, atBoundary bool) {
	if start < m.start || start > m.leo {
		m.fatalf("start offset moved from %d to %d (LEO %d)", m.start, start, m.leo)
	}
	if start == m.start {
		return
	}
	m.startMoved = true
	drop := 0
	for drop < len(m.batches) && m.batches[drop].next <= start {
		drop++
	}
	if atBoundary && start != m.leo && m.batches[drop].base != start {
		m.fatalf("retention moved the start to %d, inside batch %d..%d", start, m.batches[drop].base, m.batches[drop].next-1)
	}
	m.batches = m.batches[drop:]
	m.start = start
}

func (m *logModel) crash() {
	flushed := m.l.FlushedOffset()
	m.env.mem.Crash()
	m.l = mustOpen(m.t, m.env.dir, m.cfg)
	leo := m.l.EndOffset()
	if leo < flushed {
		m.fatalf("crash lost flushed data: LEO %d, flushed offset was %d", leo, flushed)
	}
	if leo > m.leo {
		m.fatalf("after crash LEO %d is beyond the model's %d", leo, m.leo)
	}
	m.cutAt(max(leo, m.start))
}

func (m *logModel) reopen() {
	epochs := m.l.Epochs()
	if err := m.l.Close(); err != nil {
		m.fatalf("Close: %v", err)
	}
	m.l = mustOpen(m.t, m.env.dir, m.cfg)
	if got := m.l.FlushedOffset(); got != m.leo {
		m.fatalf("after clean reopen FlushedOffset = %d, want LEO %d", got, m.leo)
	}
	if got := m.l.Epochs(); fmt.Sprint(got) != fmt.Sprint(epochs) {
		m.fatalf("after clean reopen Epochs = %v, want %v", got, epochs)
	}
}

func (m *logModel) expectRead(offset, maxOffset int64, maxBytes int, minOne bool) []byte {
	var out []byte
	for _, b := range m.batches {
		if b.next <= offset {
			continue
		}
		if b.next-1 >= maxOffset || len(out)+len(b.bytes) > maxBytes && !(minOne && len(out) == 0) {
			break
		}
		out = append(out, b.bytes...)
	}
	return out
}

func (m *logModel) check(stage string) {
	m.t.Helper()
	l := m.l
	if got := l.EndOffset(); got != m.leo {
		m.fatalf("%s: LEO %d, want %d", stage, got, m.leo)
	}
	if got := l.StartOffset(); got != m.start {
		m.fatalf("%s: start offset %d, want %d", stage, got, m.start)
	}
	all, err := l.Read(m.start, m.leo, 1<<30, true)
	if err != nil {
		m.fatalf("%s: Read(all): %v", stage, err)
	}
	if want := m.expectRead(m.start, m.leo, 1<<30, true); !bytes.Equal(all, want) {
		m.fatalf("%s: the log holds %d bytes, the model %d", stage, len(all), len(want))
	}
	for range 3 {
		offset := m.start + m.rng.Int64N(m.leo-m.start+1)
		maxOffset := offset + m.rng.Int64N(m.leo-offset+2)
		maxBytes, minOne := m.rng.IntN(2000)-10, m.rng.IntN(2) == 0
		got, err := l.Read(offset, maxOffset, maxBytes, minOne)
		if err != nil {
			m.fatalf("%s: Read(%d, %d, %d, %v): %v", stage, offset, maxOffset, maxBytes, minOne, err)
		}
		if want := m.expectRead(offset, maxOffset, maxBytes, minOne); !bytes.Equal(got, want) {
			m.fatalf("%s: Read(%d, %d, %d, %v) = %d bytes, want %d", stage, offset, maxOffset, maxBytes, minOne, len(got), len(want))
		}
	}
	// The epoch cache covers each batch with the batch's own epoch.
	epochs := l.Epochs()
	for _, b := range m.batches {
		covering := int32(-1)
		for _, e := range epochs {
			if e.StartOffset <= max(b.base, m.start) {
				covering = e.Epoch
			}
		}
		if covering != b.epoch {
			m.fatalf("%s: batch %d..%d of epoch %d is covered by epoch %d in %v", stage, b.base, b.next-1, b.epoch, covering, epochs)
		}
	}
	if !m.startMoved {
		for pid := range int64(3) {
			var last *modelBatch
			for i := range m.batches {
				if m.batches[i].producerID == pid {
					last = &m.batches[i]
				}
			}
			st, ok := l.Producer(pid)
			switch {
			case last == nil && ok:
				m.fatalf("%s: producer %d has state %+v but no batches", stage, pid, st)
			case last != nil && (!ok || st.LastOffset != last.next-1 || st.LastSequence != last.lastSeq):
				m.fatalf("%s: producer %d state %+v (%v), want last sequence %d at %d", stage, pid, st, ok, last.lastSeq, last.next-1)
			}
		}
	}
}
