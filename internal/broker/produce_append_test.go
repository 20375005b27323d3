package broker

import (
	"runtime"
	"testing"
)

// A Produce request's partitions are appended by more than one goroutine
// only when it is large and names no partition twice.
func TestAppendWorkers(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	a, b, c := &localPartition{}, &localPartition{}, &localPartition{}
	big := make([]byte, parallelAppendBytes/2)
	for _, tc := range []struct {
		name string
		jobs []produceJob
		want int
	}{
		{"none", nil, 1},
		{"one large partition", []produceJob{{lp: a, records: make([]byte, 2*parallelAppendBytes)}}, 1},
		{"small request", []produceJob{{lp: a, records: big[:10]}, {lp: b, records: big[:10]}}, 1},
		{"large request", []produceJob{{lp: a, records: big}, {lp: b, records: big}, {lp: c, records: big}}, min(procs, 3)},
		{"a partition twice", []produceJob{{lp: a, records: big}, {lp: b, records: big}, {lp: a, records: big}}, 1},
	} {
		if got := appendWorkers(tc.jobs); got != tc.want {
			t.Errorf("%s: %d workers, want %d", tc.name, got, tc.want)
		}
	}
	if procs < 2 {
		t.Logf("GOMAXPROCS is %d: the large request's case checks nothing more", procs)
	}
}
