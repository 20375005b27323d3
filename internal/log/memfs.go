package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS for tests. It models what survives a power loss:
//
//   - File contents are durable up to the last Sync of the file. Crash
//     reverts every file to its synced content; if the file was only appended
//     to since then, an arbitrary prefix of the appended bytes (chosen by the
//     seeded random source) survives as well, like a torn write.
//   - Directory entries (created, renamed and removed files) are durable
//     only after SyncDir of their directory; Crash reverts the namespace to
//     the last synced one, so an unsynced new file vanishes and an unsynced
//     removal is undone.
//
// FailNextWrite and FailNextSync inject errors. Handles opened before a Crash
// fail afterwards, as the process that owned them is gone.
type MemFS struct {
	mu sync.Mutex
	// rng picks torn-write lengths.
	rng *rand.Rand
	// generation counts crashes; handles of an older generation are dead.
	generation int
	// dirs is the set of directories (made durable at once, for simplicity).
	dirs map[string]bool
	// files is the live namespace; durable is the namespace a crash leaves.
	files   map[string]*memNode
	durable map[string]*memNode
	// Pending injected failures; the suffix selects the files they hit.
	writeErr, syncErr             error
	writeErrSuffix, syncErrSuffix string
	// syncHook, if set, runs before each file Sync, outside the lock (tests
	// block it to hold a sync in progress); syncs counts file Syncs.
	syncHook func(name string)
	syncs    map[string]int
}

// memNode is one file's contents (an inode: renames keep the node).
type memNode struct {
	data []byte
	// syncedLen is the length of the durable content. While the file is only
	// appended to, that content is data[:syncedLen]; once an operation
	// changes synced bytes, syncedCopy keeps the durable content instead.
	syncedLen  int
	syncedCopy []byte
	modTime    time.Time
}

// NewMemFS returns an empty MemFS whose torn writes are drawn from seed.
func NewMemFS(seed uint64) *MemFS {
	return &MemFS{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		dirs:    map[string]bool{"/": true, ".": true},
		files:   map[string]*memNode{},
		durable: map[string]*memNode{},
	}
}

var _ FS = (*MemFS)(nil)

// FailNextWrite makes the next Write to a file whose name ends in suffix
// ("" for any file) write a random prefix of its bytes and return err.
func (m *MemFS) FailNextWrite(suffix string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writeErr, m.writeErrSuffix = err, suffix
}

// FailNextSync makes the next Sync or SyncDir of a name ending in suffix
// ("" for any) return err without making anything durable.
func (m *MemFS) FailNextSync(suffix string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncErr, m.syncErrSuffix = err, suffix
}

// SetSyncHook installs a function called before every file Sync (nil
// removes it). Call it while no other goroutine uses the MemFS.
func (m *MemFS) SetSyncHook(hook func(name string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncHook = hook
}

// Syncs returns how many times files whose names end in suffix were
// synced successfully.
func (m *MemFS) Syncs(suffix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for name, c := range m.syncs {
		if strings.HasSuffix(name, suffix) {
			n += c
		}
	}
	return n
}

// Crash simulates a power loss: everything not made durable is dropped, with
// torn tails as described on MemFS, and every open handle dies.
func (m *MemFS) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generation++
	m.writeErr, m.syncErr = nil, nil
	seen := map[*memNode]bool{}
	m.files = map[string]*memNode{}
	for name, n := range m.durable {
		m.files[name] = n
		if seen[n] {
			continue
		}
		seen[n] = true
		if n.syncedCopy != nil {
			n.data = n.syncedCopy
		} else if len(n.data) > n.syncedLen {
			n.data = n.data[:n.syncedLen+m.rng.IntN(len(n.data)-n.syncedLen+1)]
		}
		n.data = slices.Clip(n.data)
		n.syncedLen, n.syncedCopy = len(n.data), nil
	}
}

// ReadFile returns a copy of a file's current contents (for tests).
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[filepath.Clean(name)]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(n.data), nil
}

func (m *MemFS) failWriteLocked(name string) error {
	if m.writeErr != nil && strings.HasSuffix(name, m.writeErrSuffix) {
		err := m.writeErr
		m.writeErr = nil
		return err
	}
	return nil
}

func (m *MemFS) failSyncLocked(name string) error {
	if m.syncErr != nil && strings.HasSuffix(name, m.syncErrSuffix) {
		err := m.syncErr
		m.syncErr = nil
		return err
	}
	return nil
}

func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	if !m.dirs[filepath.Dir(name)] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	n, ok := m.files[name]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		n = &memNode{modTime: time.Now()}
		m.files[name] = n
	}
	if flag&os.O_TRUNC != 0 {
		n.truncate(0)
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if writable && flag&os.O_APPEND == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("memfs: writable files must be opened with O_APPEND")}
	}
	return &memFile{fs: m, node: n, name: name, generation: m.generation, writable: writable}, nil
}

func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	if _, ok := m.files[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	return nil
}

func (m *MemFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	prefix := name + string(filepath.Separator)
	for f := range m.files {
		if f == name || strings.HasPrefix(f, prefix) {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if d == name || strings.HasPrefix(d, prefix) {
			delete(m.dirs, d)
		}
	}
	return nil
}

func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	n, ok := m.files[oldpath]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	delete(m.files, oldpath)
	m.files[newpath] = n
	return nil
}

func (m *MemFS) ReadDir(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if !m.dirs[dir] {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for f := range m.files {
		if filepath.Dir(f) == dir {
			names = append(names, filepath.Base(f))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			names = append(names, filepath.Base(d))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *MemFS) MkdirAll(dir string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := filepath.Clean(dir); !m.dirs[d]; d = filepath.Dir(d) {
		m.dirs[d] = true
	}
	return nil
}

func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = filepath.Clean(dir)
	if err := m.failSyncLocked(dir); err != nil {
		return err
	}
	for f := range m.durable {
		if filepath.Dir(f) == dir {
			delete(m.durable, f)
		}
	}
	for f, n := range m.files {
		if filepath.Dir(f) == dir {
			m.durable[f] = n
		}
	}
	return nil
}

// truncate sets the node's length, remembering the durable content first if
// the cut reaches into it.
func (n *memNode) truncate(size int) {
	if size < n.syncedLen && n.syncedCopy == nil {
		n.syncedCopy = slices.Clone(n.data[:n.syncedLen])
	}
	if size <= len(n.data) {
		n.data = n.data[:size]
	} else {
		n.data = append(n.data, make([]byte, size-len(n.data))...)
	}
	n.modTime = time.Now()
}

// memFile is a handle on a memNode.
type memFile struct {
	fs         *MemFS
	node       *memNode
	name       string
	generation int
	writable   bool
	closed     bool
}

func (f *memFile) checkLocked(op string) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	case f.generation != f.fs.generation:
		return &fs.PathError{Op: op, Path: f.name, Err: errors.New("memfs: handle from before a crash")}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("write"); err != nil {
		return 0, err
	}
	if !f.writable {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: fs.ErrPermission}
	}
	if err := f.fs.failWriteLocked(f.name); err != nil {
		n := f.fs.rng.IntN(len(p) + 1)
		f.node.data = append(f.node.data, p[:n]...)
		return n, fmt.Errorf("memfs: write %s: %w", f.name, err)
	}
	f.node.data = append(f.node.data, p...)
	f.node.modTime = time.Now()
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	hook := f.fs.syncHook
	f.fs.mu.Unlock()
	if hook != nil {
		hook(f.name)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("sync"); err != nil {
		return err
	}
	if err := f.fs.failSyncLocked(f.name); err != nil {
		return fmt.Errorf("memfs: sync %s: %w", f.name, err)
	}
	f.node.syncedLen, f.node.syncedCopy = len(f.node.data), nil
	if f.fs.syncs == nil {
		f.fs.syncs = map[string]int{}
	}
	f.fs.syncs[f.name]++
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("truncate"); err != nil {
		return err
	}
	if !f.writable || size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	f.node.truncate(int(size))
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.checkLocked("stat"); err != nil {
		return nil, err
	}
	return memFileInfo{name: filepath.Base(f.name), size: int64(len(f.node.data)), modTime: f.node.modTime}, nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

type memFileInfo struct {
	name    string
	size    int64
	modTime time.Time
}

func (i memFileInfo) Name() string       { return i.name }
func (i memFileInfo) Size() int64        { return i.size }
func (i memFileInfo) Mode() fs.FileMode  { return 0o644 }
func (i memFileInfo) ModTime() time.Time { return i.modTime }
func (i memFileInfo) IsDir() bool        { return false }
func (i memFileInfo) Sys() any           { return nil }
