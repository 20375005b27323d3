package coord

import (
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/meta"
)

// RegisterBroker takes its own incarnation's leftover registration over
// (a client closed without revoking its lease), also when the broker's
// Endpoints is an empty, non-nil list, which JSON gives back as nil: the
// leftover is recognised by its encoding, not by comparing decoded values.
func TestRegisterTakesOverItsLeftover(t *testing.T) {
	for _, tc := range []struct {
		name string
		eps  []meta.Endpoint
	}{
		{"endpoints", []meta.Endpoint{{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Host: "h", Port: 1}}},
		{"empty non-nil endpoints", []meta.Endpoint{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := sharedEtcd(t)
			cluster := clusterName(t)
			old := connect(t, eps, cluster)
			b := testBroker(8)
			b.Endpoints = tc.eps
			s := register(t, old, b, 10*time.Second)
			old.Close() // no revoke: the lease lives on
			<-s.Done()
			c := connect(t, eps, cluster)
			s2, err := c.RegisterBroker(testCtx(t), b, 10*time.Second)
			if err != nil {
				t.Fatalf("the same incarnation cannot take its leftover over: %v", err)
			}
			s2.Close(testCtx(t))
		})
	}
}
