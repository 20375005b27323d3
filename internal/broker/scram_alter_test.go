package broker

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startPlainBroker starts one PLAINTEXT broker with its own embedded etcd
// and returns it with a client.
func startPlainBroker(t *testing.T) (*Broker, *kgo.Client) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Listeners = []string{"PLAINTEXT://127.0.0.1:0"}
	cfg.DataDir = t.TempDir()
	cfg.MetadataClientURL = "http://127.0.0.1:0"
	cfg.MetadataPeerURL = "http://127.0.0.1:0"
	cfg.Logger = quietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return b, cl
}

// A user's changes in one AlterUserScramCredentials are made together or
// not at all: deleting alice's SCRAM-SHA-256 credential (which exists) and
// her SCRAM-SHA-512 one (which does not) answers RESOURCE_NOT_FOUND and
// leaves the SCRAM-SHA-256 one in place, as Kafka checks every deletion
// before writing anything.
func TestAlterScramAllOrNothing(t *testing.T) {
	_, cl := startPlainBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations = "alice", 1, 4096
	up.Salt = []byte("0123456789abcdef")
	sum := sha256.Sum256([]byte("salted"))
	up.SaltedPassword = sum[:]
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, up)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("upsert: %+v", resp.Results)
	}

	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, m := range []int8{1, 2} {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "alice", m
		req.Deletions = append(req.Deletions, d)
	}
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 1 {
		t.Fatalf("results %+v, want one for alice", resp.Results)
	}
	if code := resp.Results[0].ErrorCode; code != kerr.ResourceNotFound.Code {
		t.Fatalf("deleting a missing credential beside an existing one: %v, want RESOURCE_NOT_FOUND", kerr.ErrorForCode(code))
	}

	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	du := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
	du.Name = "alice"
	dreq.Users = append(dreq.Users, du)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Results) != 1 || dresp.Results[0].ErrorCode != 0 || len(dresp.Results[0].CredentialInfos) != 1 {
		t.Fatalf("alice's alteration failed, yet her SCRAM-SHA-256 credential is gone: describe %+v", dresp.Results)
	}
}
