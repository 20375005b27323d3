package docker

import (
	"fmt"
	"testing"
	"time"
)

// TestCheckTxns checks the transactional checker on made-up outcomes and
// logs (no Docker).
func TestCheckTxns(t *testing.T) {
	t0 := time.Now()
	txns := map[string]Txn{
		"x-000001": {ID: "x-000001", Records: 2, Outcome: TxnCommitted, At: t0},     // whole: fine
		"x-000002": {ID: "x-000002", Records: 2, Outcome: TxnCommitted, At: t0},     // missing
		"x-000003": {ID: "x-000003", Records: 3, Outcome: TxnCommitted, At: t0},     // one of three
		"x-000004": {ID: "x-000004", Records: 1, Outcome: TxnAborted, At: t0},       // visible
		"x-000005": {ID: "x-000005", Records: 2, Outcome: TxnAborted, At: t0},       // invisible: fine
		"x-000006": {ID: "x-000006", Records: 2, Outcome: TxnIndeterminate, At: t0}, // none: fine
		"x-000007": {ID: "x-000007", Records: 2, Outcome: TxnIndeterminate, At: t0}, // all: fine
		"x-000008": {ID: "x-000008", Records: 2, Outcome: TxnIndeterminate, At: t0}, // half
		"x-000009": {ID: "x-000009", Records: 1, Outcome: TxnCommitted, At: t0},     // twice
	}
	final := map[int32]map[int64]string{
		0: {0: "x-000001-0/2", 1: "x-000003-1/3", 2: "x-000004-0/1", 3: "x-000007-0/2", 5: "x-000009-0/1", 7: "sentinel-0"},
		1: {0: "x-000001-1/2", 1: "x-000007-1/2", 2: "x-000008-0/2", 3: "x-000009-0/1", 4: "y-000001-0/1", 6: "sentinel-1"},
	}
	reads := []Read{
		{0, 0, "x-000001-0/2", t0}, {0, 2, "x-000004-0/1", t0},
		{1, 0, "x-000001-1/2", t0}, {1, 1, "x-000005-1/2", t0}, // aborted, and not in the final log
	}
	got := map[string]int{}
	for _, a := range CheckTxns(txns, final, reads) {
		got[a.Check]++
	}
	want := map[string]int{
		"txn-committed-lost":  1, // x-000002
		"txn-partial":         2, // x-000003, x-000008
		"txn-aborted-visible": 3, // x-000004 in the log and read, x-000005 read
		"txn-duplicate":       1, // x-000009
		"txn-unknown":         1, // y-000001
		"txn-read-truncated":  1, // x-000005 read at 1/1, not there
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("anomalies %v, want %v", got, want)
	}

	clean := map[string]Txn{
		"a-000000": {ID: "a-000000", Records: 2, Outcome: TxnCommitted},
		"a-000001": {ID: "a-000001", Records: 1, Outcome: TxnAborted},
	}
	cleanLog := map[int32]map[int64]string{0: {0: "a-000000-0/2", 2: "a-000000-1/2", 4: "sentinel-0"}}
	if as := CheckTxns(clean, cleanLog, []Read{{0, 0, "a-000000-0/2", t0}, {0, 2, "a-000000-1/2", t0}}); len(as) != 0 {
		t.Errorf("anomalies in a clean history: %v", as)
	}
}

func TestTxnOf(t *testing.T) {
	for v, want := range map[string]string{
		"campaign-txn-tx0-000012-1/3": "campaign-txn-tx0-000012",
		"sentinel-0":                  "",
		"v-00000001":                  "",
	} {
		got, ok := txnOf(v)
		if ok != (want != "") || got != want {
			t.Errorf("txnOf(%q) = %q, %v; want %q", v, got, ok, want)
		}
	}
}
