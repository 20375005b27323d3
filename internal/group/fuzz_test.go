package group

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzKeys are the group APIs the coordinator serves, with the versions
// the broker advertises for them.
var fuzzKeys = []struct {
	key      int16
	min, max int16
}{
	{8, 2, 8}, {9, 1, 7}, {11, 0, 9}, {12, 0, 4}, {13, 0, 4}, {14, 0, 5},
	{15, 0, 5}, {16, 0, 4}, {42, 0, 2}, {47, 0, 0},
}

// FuzzCoordinator feeds the coordinator a sequence of group requests
// decoded from the input, as the broker would after decoding them off the
// wire, interleaved with clock ticks: whatever the requests say, the
// coordinator must neither panic nor hang, and every response must encode.
//
// Input: repeated [selector byte][clock step byte][body length uint16][body].
func FuzzCoordinator(f *testing.F) {
	seed := func(reqs ...kmsg.Request) []byte {
		var b []byte
		for _, r := range reqs {
			body := r.AppendTo(nil)
			sel := byte(0)
			for i, k := range fuzzKeys {
				if k.key == r.Key() {
					sel = byte(i) + byte(r.GetVersion()-k.min)*byte(len(fuzzKeys))
				}
			}
			b = append(b, sel, 3)
			b = binary.BigEndian.AppendUint16(b, uint16(len(body)))
			b = append(b, body...)
		}
		return b
	}
	j := joinReq("g", "", 3, proto("range", "t"))
	s := syncReq("g", "m", 1, map[string][]byte{"m": []byte("a")})
	s.Version = 3
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "m", 1
	oc := commitReq("g", "", -1, 7, commitPartition{topic: "t", offset: 5})
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 5, "g"
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g", "m"
	f.Add(seed(j, s, hb, oc, of, lv))
	f.Add(seed(oc, of))
	f.Add([]byte{0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, in []byte) {
		clk := &fakeClock{now: time.UnixMilli(1_700_000_000_000)}
		cfg := testConfig(clk)
		cfg.Partitions = 2
		cfg.MinSessionTimeout = time.Millisecond
		c := New(cfg)
		defer c.Close()
		store := &memStore{}
		for p := range int32(2) {
			c.Elected(p, 1, 2, store)
		}
		h := &harness{t: t, clk: clk, store: store, c: c, cfg: cfg}
		h.waitLoaded(0)
		h.waitLoaded(1)
		for n := 0; len(in) >= 4 && n < 64; n++ {
			sel, step := int(in[0]), time.Duration(in[1])*100*time.Millisecond
			size := int(binary.BigEndian.Uint16(in[2:]))
			in = in[4:]
			size = min(size, len(in))
			body := in[:size]
			in = in[size:]
			k := fuzzKeys[sel%len(fuzzKeys)]
			version := k.min + int16(sel/len(fuzzKeys))%(k.max-k.min+1)
			req := kmsg.RequestForKey(k.key)
			req.SetVersion(version)
			if err := req.ReadFrom(body); err != nil {
				continue
			}
			var resp kmsg.Response
			// Join and Sync wait for rebalances: bound them, as a
			// connection's context would.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			switch r := req.(type) {
			case *kmsg.OffsetCommitRequest:
				resp = c.CommitOffsets(ctx, r)
			case *kmsg.OffsetFetchRequest:
				resp = c.FetchOffsets(r)
			case *kmsg.JoinGroupRequest:
				resp = c.Join(ctx, r, "fuzz", "/127.0.0.1")
			case *kmsg.HeartbeatRequest:
				resp = c.Heartbeat(r)
			case *kmsg.LeaveGroupRequest:
				resp = c.Leave(r)
			case *kmsg.SyncGroupRequest:
				resp = c.Sync(ctx, r)
			case *kmsg.DescribeGroupsRequest:
				out := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
				out.Groups = c.Describe(r.Groups)
				resp = out
			case *kmsg.ListGroupsRequest:
				out := r.ResponseKind().(*kmsg.ListGroupsResponse)
				out.Groups, out.ErrorCode = c.List(r.StatesFilter)
				resp = out
			case *kmsg.DeleteGroupsRequest:
				out := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
				out.Groups = c.Delete(ctx, r.Groups)
				resp = out
			case *kmsg.OffsetDeleteRequest:
				resp = c.DeleteOffsets(ctx, r)
			}
			cancel()
			if resp == nil {
				t.Fatalf("no response to %T", req)
			}
			_ = resp.AppendTo(nil)
			h.tick(step)
		}
		// Everything the coordinator wrote must load into a fresh one.
		c2 := New(cfg)
		defer c2.Close()
		c2.Elected(0, 1, 2, store)
		h2 := &harness{t: t, clk: clk, store: store, c: c2, cfg: cfg}
		h2.waitLoaded(0)
	})
}
