// Secured listeners (security_test.go) driven by kcat, librdkafka's
// command-line client, run as a separate process the way its users run
// it. Unlike confluent-kafka-go it needs no cgo here, only the kcat
// binary; .ci/run installs it (Debian's kcat package) when it is missing.

package test

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/broker"
	"github.com/samsa-io/samsa/internal/testutil"
)

// kcatRecords is how many records each round trip produces, over
// kcatPartitions partitions.
const kcatRecords, kcatPartitions = 40, 2

// kcatRunTimeout bounds each kcat process: it is killed then, so a kcat
// that hangs fails the test rather than stall it.
const kcatRunTimeout = 30 * time.Second

// kcatBinary returns kcat's path. Like the Docker tests (test/docker), the
// test fails, saying what to do, when its tool is missing: it does not
// skip.
func kcatBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("this test needs kcat (librdkafka's CLI) on PATH; it does not skip without it. "+
			"Install it with `apt-get install kcat` (.ci/run does): %v", err)
	}
	return path
}

// kcatResult is what one kcat process did.
type kcatResult struct {
	args           []string
	stdout, stderr string
	err            error // from Wait: nil for exit status 0
	elapsed        time.Duration
}

func (r kcatResult) String() string {
	return fmt.Sprintf("kcat %s: %v after %v\nstderr:\n%s", strings.Join(r.args, " "), r.err, r.elapsed.Round(time.Millisecond), r.stderr)
}

// runKcat runs kcat with args and stdin, killed at kcatRunTimeout; a kcat
// that had to be killed fails the test.
func runKcat(t *testing.T, ctx context.Context, bin string, stdin string, args ...string) kcatResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, kcatRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := kcatResult{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err, elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("killed at the deadline (%v): %v", ctx.Err(), r)
	}
	return r
}

// kcatCred is how kcat authenticates: SCRAM on the SASL_SSL listener, or a
// client certificate on the MTLS listener.
type kcatCred struct {
	name string
	addr string
	// SCRAM-SHA-256 over SASL_SSL.
	user, pass string
	// The client certificate's subject for MTLS; nil for no certificate.
	subject *pkix.Name
	mtls    bool
}

// kcatSecurity is librdkafka's configuration for cred, as -X options,
// with PEM files in dir.
//
// Host names are verified: librdkafka's default
// ssl.endpoint.identification.algorithm is https, and it is set here
// explicitly so that the test keeps verifying if the default changes. The
// broker's certificate (testutil.CA.Issue for a server) carries the SANs
// 127.0.0.1, ::1 and localhost, and the listeners bind and advertise
// 127.0.0.1, which librdkafka checks against the IP address SAN.
func kcatSecurity(t *testing.T, p *securePKI, dir string, cred kcatCred) []string {
	t.Helper()
	x := []string{
		"-X", "ssl.ca.location=" + p.ca.WriteCert(t, dir, "ca.pem"),
		"-X", "ssl.endpoint.identification.algorithm=https",
	}
	if !cred.mtls {
		return append(x, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username="+cred.user, "-X", "sasl.password="+cred.pass)
	}
	x = append(x, "-X", "security.protocol=SSL")
	if cred.subject != nil {
		// One PEM file with the key and the certificate, as a Kafka PEM
		// keystore holds them: librdkafka reads the certificate and the
		// key each from it.
		cert, key := p.ca.Issue(t, *cred.subject, false)
		ks := testutil.WriteKeystore(t, dir, "client.pem", cert, key)
		x = append(x, "-X", "ssl.certificate.location="+ks, "-X", "ssl.key.location="+ks)
	}
	return x
}

// kcatMetadata is the part of `kcat -L -J` the test reads.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Leader    int32  `json:"leader"`
			Error     string `json:"error"`
		} `json:"partitions"`
	} `json:"topics"`
}

// kcatPartition is the partition librdkafka's consistent_random
// partitioner picks for a key: CRC32 of the key modulo the partitions.
func kcatPartition(key []byte, partitions int) int32 {
	return int32(crc32.ChecksumIEEE(key) % uint32(partitions))
}

// kcatFormat is the consume output format: partition, offset, key,
// headers and value, tab-separated, a record a line.
const kcatFormat = `%p\t%o\t%k\t%h\t%s\n`

// parseKcatRecords parses records printed with kcatFormat.
func parseKcatRecords(t *testing.T, out string) []compatRecord {
	t.Helper()
	var rs []compatRecord
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 5 {
			t.Fatalf("kcat printed %q, want partition, offset, key, headers and value", line)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("kcat printed %q: %v", line, err)
		}
		r := compatRecord{Partition: int32(p), Offset: o, Key: []byte(f[2]), Value: []byte(f[4])}
		if f[3] != "" {
			for h := range strings.SplitSeq(f[3], ",") {
				k, v, _ := strings.Cut(h, "=")
				r.Headers = append(r.Headers, compatHeader{Key: k, Value: []byte(v)})
			}
		}
		rs = append(rs, r)
	}
	return rs
}

// kcat lists the broker and topics (-L), produces keyed records with a
// header (-P) and consumes them with a balanced consumer group (-G), over
// SASL_SSL with SCRAM-SHA-256 and over SSL with a client certificate
// (PEM files, host names verified). Each record comes back exactly once,
// in the partition librdkafka's partitioner chose for its key and at the
// offset it was produced at; the group's offsets, committed by kcat when
// it closes, are what franz-go's kadm fetches, and a second kcat of the
// group resumes there and reads nothing. A wrong password, and no client
// certificate, make kcat exit non-zero within its metadata timeout.
func TestSecurityClientsKcat(t *testing.T) {
	bin := kcatBinary(t)
	ctx := testContext(t, 150*time.Second)
	if v := runKcat(t, ctx, bin, "", "-V"); v.err == nil {
		t.Logf("%s", strings.TrimSpace(v.stdout))
	}
	p := newSecurePKI(t)
	b := StartBroker(t, securedOpts(p), func(cfg *broker.Config) {
		for k, v := range map[string]string{
			"group.initial.rebalance.delay.ms": "0",
			"offsets.topic.num.partitions":     "1",
		} {
			if err := cfg.Set(k, v); err != nil {
				panic(err)
			}
		}
	})
	saslSSL, mtls, plainAddr := listenerAddr(t, b, lisSASLSSL), listenerAddr(t, b, lisMTLS), listenerAddr(t, b, lisPlain)
	check := kadm.NewClient(newKgoClient(t, plainAddr))
	admin := kadm.NewClient(secureClient(t, saslSSL, kgo.DialTLSConfig(p.clientTLS(t, nil)),
		kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism())))

	creds := []kcatCred{
		{name: "SASL_SSL-SCRAM-SHA-256", addr: saslSSL, user: "admin", pass: "admin-secret"},
		{name: "MTLS", addr: mtls, mtls: true, subject: &pkix.Name{CommonName: "kcat", Organization: []string{"clients"}}},
	}
	for _, cred := range creds {
		t.Run(cred.name, func(t *testing.T) {
			topic, group := "sec-kcat-"+cred.name, "g-sec-kcat-"+cred.name
			if _, err := admin.CreateTopic(ctx, kcatPartitions, 1, nil, topic); err != nil {
				t.Fatalf("create %s over SASL_SSL: %v", topic, err)
			}
			sec := kcatSecurity(t, p, t.TempDir(), cred)
			kcat := func(stdin string, args ...string) kcatResult {
				t.Helper()
				return runKcat(t, ctx, bin, stdin, append(append([]string{"-b", cred.addr}, sec...), args...)...)
			}

			// -L: the broker at this listener's address, and the topic.
			r := kcat("", "-L", "-J", "-m", "10")
			if r.err != nil {
				t.Fatalf("metadata: %v", r)
			}
			var md kcatMetadata
			if err := json.Unmarshal([]byte(r.stdout), &md); err != nil {
				t.Fatalf("metadata: %v in %q", err, r.stdout)
			}
			if len(md.Brokers) != 1 || md.Brokers[0].ID != 1 || md.Brokers[0].Name != cred.addr {
				t.Fatalf("metadata lists brokers %+v, want broker 1 at %s", md.Brokers, cred.addr)
			}
			listed := false
			for _, tm := range md.Topics {
				if tm.Topic != topic {
					continue
				}
				listed = true
				if tm.Error != "" || len(tm.Partitions) != kcatPartitions {
					t.Fatalf("metadata of %s: %+v, want %d partitions", topic, tm, kcatPartitions)
				}
				for _, pm := range tm.Partitions {
					if pm.Leader != 1 || pm.Error != "" {
						t.Fatalf("metadata of %s: partition %+v, want leader 1", topic, pm)
					}
				}
			}
			if !listed {
				t.Fatalf("metadata does not list %s: %s", topic, r.stdout)
			}

			// -P: keyed records, one a line, each with the same header.
			var want []compatRecord
			var in strings.Builder
			counts := map[int32]int64{}
			for i := range kcatRecords {
				key := fmt.Appendf(nil, "key-%05d", i)
				part := kcatPartition(key, kcatPartitions)
				w := compatRecord{Partition: part, Offset: counts[part], Key: key,
					Value:   fmt.Appendf(nil, "value %d of %s", i, topic),
					Headers: []compatHeader{{Key: "origin", Value: []byte("kcat")}}}
				counts[part]++
				want = append(want, w)
				fmt.Fprintf(&in, "%s|%s\n", w.Key, w.Value)
			}
			if len(counts) != kcatPartitions {
				t.Fatalf("the keys fill %d partitions, want all %d", len(counts), kcatPartitions)
			}
			r = kcat(in.String(), "-P", "-t", topic, "-K", "|", "-H", "origin=kcat",
				"-X", "partitioner=consistent_random", "-X", "acks=all", "-X", "message.timeout.ms=20000")
			if r.err != nil {
				t.Fatalf("produce: %v", r)
			}
			checkEndOffsets(t, ctx, plainAddr, topic, counts)

			// -G: a balanced consumer group from the beginning, until the
			// end of every partition assigned (-e); kcat commits its
			// offsets when it closes.
			r = kcat("", "-G", group, "-o", "beginning", "-e", "-f", kcatFormat,
				"-X", "auto.offset.reset=earliest", topic)
			if r.err != nil {
				t.Fatalf("consume: %v", r)
			}
			checkCompatRecords(t, want, parseKcatRecords(t, r.stdout))
			if t.Failed() {
				t.Fatalf("consumed:\n%s\n%v", r.stdout, r)
			}
			offs, err := check.FetchOffsets(ctx, group)
			if err != nil {
				t.Fatalf("fetch the offsets of %s: %v", group, err)
			}
			for part, n := range counts {
				o, ok := offs.Lookup(topic, part)
				if !ok || o.Err != nil || o.At != n {
					t.Errorf("group %s committed %s[%d] at %d (%v, found %v), want %d", group, topic, part, o.At, o.Err, ok, n)
				}
			}

			// Another kcat of the group starts at the committed offsets:
			// nothing left.
			r = kcat("", "-G", group, "-e", "-f", kcatFormat, topic)
			if r.err != nil {
				t.Fatalf("consume again: %v", r)
			}
			if r.stdout != "" {
				t.Errorf("the group's second consumer read records below its committed offsets:\n%s", r.stdout)
			}
		})
	}

	refused := func(t *testing.T, cred kcatCred, why string) {
		t.Helper()
		sec := kcatSecurity(t, p, t.TempDir(), cred)
		r := runKcat(t, ctx, bin, "", append(append([]string{"-b", cred.addr}, sec...), "-L", "-m", "5")...)
		var exit *exec.ExitError
		if !errors.As(r.err, &exit) {
			t.Fatalf("%s: kcat succeeded (or did not run), want a non-zero exit: %v\nstdout:\n%s", cred.name, r, r.stdout)
		}
		if !strings.Contains(r.stderr, why) {
			t.Fatalf("%s: kcat failed without saying %q: %v", cred.name, why, r)
		}
		t.Logf("%s: exit %d after %v", cred.name, exit.ExitCode(), r.elapsed.Round(time.Millisecond))
	}
	t.Run("wrong password", func(t *testing.T) {
		cred := creds[0]
		cred.pass = "wrong"
		refused(t, cred, "SASL authentication error: auth: authentication failed: invalid credentials")
	})
	t.Run("no client certificate", func(t *testing.T) {
		cred := creds[1]
		cred.subject = nil
		// TLS 1.3: the broker's alert arrives at kcat's first read.
		refused(t, cred, "alert certificate required")
	})
}
