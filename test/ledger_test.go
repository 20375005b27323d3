package test

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// ledgerRow is one row of the API ledger in docs/compatibility.md.
type ledgerRow struct {
	key                     int16
	name                    string
	samsa, kafka40, kafka44 string
	does                    string
}

// readLedger parses the table of the "API ledger" section.
func readLedger(t *testing.T, path string) map[int16]ledgerRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[int16]ledgerRow{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## API ledger"
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		key, err := strconv.ParseInt(cells[0], 10, 16)
		if err != nil {
			continue // the header
		}
		if len(cells) != 6 {
			t.Fatalf("ledger row %q: %d cells, want 6", line, len(cells))
		}
		if _, dup := rows[int16(key)]; dup {
			t.Errorf("key %d listed twice", key)
		}
		rows[int16(key)] = ledgerRow{int16(key), cells[1], cells[2], cells[3], cells[4], cells[5]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("no API ledger table in %s", path)
	}
	return rows
}

// ledgerRange is how the ledger writes a version range.
func ledgerRange(min, max int16) string { return fmt.Sprintf("%d–%d", min, max) }

// ledgerMax is the highest version in a ledger range, -1 for "—".
func ledgerMax(t *testing.T, cell string) int16 {
	t.Helper()
	if cell == "—" {
		return -1
	}
	_, max, ok := strings.Cut(cell, "–")
	n, err := strconv.ParseInt(max, 10, 16)
	if !ok || err != nil {
		t.Errorf("bad version range %q", cell)
	}
	return int16(n)
}

// TestCompatibilityLedger keeps the API ledger of docs/compatibility.md
// true: one row per key kmsg knows; the samsa column is what a broker
// advertises in ApiVersions; the Kafka columns' highest versions are
// franz-go's kversion tables for Kafka 4.0 and 4.4; and the last column is
// what the broker does with a v0 request for the key (served, answered
// with the error named, or the connection closed).
func TestCompatibilityLedger(t *testing.T) {
	rows := readLedger(t, "../docs/compatibility.md")
	b := StartBroker(t)
	rc := dialBad(t, b.Addr)
	advertised := advertisedKeys(t, rc)

	for key := int16(0); key <= kmsg.MaxKey; key++ {
		row, ok := rows[key]
		if !ok {
			t.Errorf("key %d (%s) is not in the ledger", key, kmsg.NameForKey(key))
			continue
		}
		delete(rows, key)
		if row.name != kmsg.NameForKey(key) {
			t.Errorf("key %d is named %q, kmsg calls it %q", key, row.name, kmsg.NameForKey(key))
		}

		samsa := "—"
		if a, ok := advertised[key]; ok {
			samsa = ledgerRange(a.MinVersion, a.MaxVersion)
		}
		if row.samsa != samsa {
			t.Errorf("%d %s: the ledger says samsa serves %s, ApiVersions says %s", key, row.name, row.samsa, samsa)
		}
		for _, k := range []struct {
			cell string
			rel  *kversion.Versions
			name string
		}{{row.kafka40, kversion.V4_0_0(), "4.0"}, {row.kafka44, kversion.V4_4_0(), "4.4"}} {
			want, ok := k.rel.LookupMaxKeyVersion(key)
			if !ok {
				want = -1
			}
			if got := ledgerMax(t, k.cell); got != want {
				t.Errorf("%d %s: the ledger says Kafka %s serves up to %d (%s), kversion says %d", key, row.name, k.name, got, k.cell, want)
			}
		}

		verb, rest, _ := strings.Cut(row.does, " ")
		switch verb {
		case "served":
			if samsa == "—" {
				t.Errorf("%d %s: the ledger says served, ApiVersions does not list it", key, row.name)
			}
		case "answers":
			// "answers CODE (v0–N)[; issue I]"
			code, versions, _ := strings.Cut(rest, " ")
			kafkaMax, _ := kversion.V4_4_0().LookupMaxKeyVersion(key)
			if want := fmt.Sprintf("(v0–%d)", min(kafkaMax, kmsg.RequestForKey(key).MaxVersion())); !strings.HasPrefix(versions, want) {
				t.Errorf("%d %s: the ledger says %q, want the versions %s", key, row.name, row.does, want)
			}
			req := kmsg.RequestForKey(key)
			req.SetVersion(0)
			unservedFill(reflect.ValueOf(req).Elem())
			resp := rc.roundTrip(req)
			n := 0
			for _, c := range unservedErrorCodes(reflect.ValueOf(resp).Elem(), nil) {
				if c == 0 {
					continue
				}
				if got := kerr.ErrorForCode(c).(*kerr.Error).Message; got != code {
					t.Errorf("%d %s: answered %s, the ledger says %s", key, row.name, got, code)
				}
				n++
			}
			if n == 0 {
				t.Errorf("%d %s: answered without an error, the ledger says %s", key, row.name, code)
			}
		case "closes,":
			c := dialBad(t, b.Addr)
			req := kmsg.RequestForKey(key)
			req.SetVersion(0)
			c.write(c.frame(req))
			c.expectClosed()
		default:
			t.Errorf("%d %s: unknown outcome %q", key, row.name, row.does)
		}
	}
	for key, row := range rows {
		t.Errorf("key %d (%s) is in the ledger but not in kmsg", key, row.name)
	}
}
