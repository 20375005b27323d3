package test

// The APIs Kafka 4.x brokers serve and samsa does not (issue 15): a request
// for one is answered with the API's error on every element the client
// reads, not by closing the connection, and the keys stay out of
// ApiVersions (internal/broker/unserved.go).

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// unservedCode is the error code each unserved API answers with: Kafka's
// own where a Kafka broker without the feature has one (AclApis without an
// authorizer, KafkaApis for delegation tokens on a PLAINTEXT listener),
// UNSUPPORTED_VERSION otherwise.
func unservedCode(key int16) *kerr.Error {
	switch key {
	case 29, 30, 31: // DescribeAcls, CreateAcls, DeleteAcls
		return kerr.SecurityDisabled
	case 38, 39, 40, 41: // delegation tokens
		return kerr.DelegationTokenRequestNotAllowed
	}
	return kerr.UnsupportedVersion
}

// advertisedKeys asks the broker's ApiVersions over rc.
func advertisedKeys(t *testing.T, rc *badConn) map[int16]kmsg.ApiVersionsResponseApiKey {
	t.Helper()
	resp := rc.roundTrip(badApiVersionsV3()).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	keys := make(map[int16]kmsg.ApiVersionsResponseApiKey, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = k
	}
	return keys
}

// TestUnservedAPIs sends, on one connection, a request for every API Kafka
// 4.4 brokers serve and samsa does not advertise, at every version from 0
// to the highest both Kafka and kmsg know, with one element in every
// array; each must be answered with its error code and nothing else, and
// the connection must stay usable.
func TestUnservedAPIs(t *testing.T) {
	b := StartBroker(t)
	rc := dialBad(t, b.Addr)
	advertised := advertisedKeys(t, rc)

	var keys []int16
	kversion.V4_4_0().EachMaxKeyVersion(func(key, _ int16) {
		if _, ok := advertised[key]; !ok {
			keys = append(keys, key)
		}
	})
	if len(keys) < 30 {
		t.Fatalf("only %d unserved keys (%v): is the Kafka table right?", len(keys), keys)
	}
	parent := rc.t
	for _, key := range keys {
		t.Run(fmt.Sprintf("%d_%s", key, kmsg.NameForKey(key)), func(t *testing.T) {
			rc.t = t // a failed read fails this subtest
			defer func() { rc.t = parent }()
			kafkaMax, _ := kversion.V4_4_0().LookupMaxKeyVersion(key)
			for v := range min(kafkaMax, kmsg.RequestForKey(key).MaxVersion()) + 1 {
				req := kmsg.RequestForKey(key)
				req.SetVersion(v)
				unservedFill(reflect.ValueOf(req).Elem())
				resp := rc.roundTrip(req)
				want := unservedCode(key)
				n := 0
				for _, c := range unservedErrorCodes(reflect.ValueOf(resp).Elem(), nil) {
					switch c {
					case 0: // a field this version does not carry
					case want.Code:
						n++
					default:
						t.Errorf("v%d: error %v, want %v", v, kerr.ErrorForCode(c), want)
					}
				}
				if n == 0 {
					t.Errorf("v%d: no %v in the response %+v", v, want, resp)
				}
			}
		})
	}

	// The connection still serves, and the keys are still not advertised.
	for key := range advertisedKeys(t, rc) {
		if slices.Contains(keys, key) {
			t.Errorf("key %d is advertised after being answered", key)
		}
	}
	md := rc.roundTrip(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 1 {
		t.Errorf("metadata after the unserved requests lists %d brokers, want 1", len(md.Brokers))
	}
}

// TestUnservedControllerAPIs: an API a Kafka broker serves only to
// controllers or other brokers (here BrokerHeartbeat, Vote) closes the
// connection, as a Kafka broker's client listener does.
func TestUnservedControllerAPIs(t *testing.T) {
	b := StartBroker(t)
	for _, req := range []kmsg.Request{kmsg.NewPtrBrokerHeartbeatRequest(), kmsg.NewPtrVoteRequest(), kmsg.NewPtrLeaderAndISRRequest()} {
		t.Run(kmsg.NameForKey(req.Key()), func(t *testing.T) {
			rc := dialBad(t, b.Addr)
			rc.write(rc.frame(req))
			rc.expectClosed()
		})
	}
}

// TestUnservedKafkaGo calls kafka-go's Client for APIs samsa does not
// serve. kafka-go asks ApiVersions but still sends a request for a key the
// broker did not list, at version 0; each call must fail with the API's
// Kafka error, not "unexpected EOF", and the client must go on working.
func TestUnservedKafkaGo(t *testing.T) {
	b := StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	transport := &kafka.Transport{}
	defer transport.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr), Timeout: 10 * time.Second, Transport: transport}
	addr := kafka.TCP(b.Addr)

	tests := []struct {
		name string
		want kafka.Error
		call func() (error, error) // the transport's error, the API's
	}{{
		// Served since issue 12; without an authorizer the answer is
		// SECURITY_DISABLED, as Kafka's.
		name: "CreateACLs", want: kafka.SecurityDisabled,
		call: func() (error, error) {
			resp, err := cl.CreateACLs(ctx, &kafka.CreateACLsRequest{Addr: addr, ACLs: []kafka.ACLEntry{{
				ResourceType: kafka.ResourceTypeTopic, ResourceName: "t", ResourcePatternType: kafka.PatternTypeLiteral,
				Principal: "User:ann", Host: "*", Operation: kafka.ACLOperationTypeRead, PermissionType: kafka.ACLPermissionTypeAllow,
			}}})
			if err != nil {
				return err, nil
			}
			if len(resp.Errors) != 1 {
				return fmt.Errorf("%d results for one creation", len(resp.Errors)), nil
			}
			return nil, resp.Errors[0]
		},
	}, {
		// Served since issue 12. kafka-go's v2+ request carries a byte
		// after its body, which samsa ignores as Kafka does.
		name: "DescribeACLs", want: kafka.SecurityDisabled,
		call: func() (error, error) {
			resp, err := cl.DescribeACLs(ctx, &kafka.DescribeACLsRequest{Addr: addr, Filter: kafka.ACLFilter{
				ResourceTypeFilter: kafka.ResourceTypeAny, ResourcePatternTypeFilter: kafka.PatternTypeAny,
				Operation: kafka.ACLOperationTypeAny, PermissionType: kafka.ACLPermissionTypeAny,
			}})
			if err != nil {
				return err, nil
			}
			return nil, resp.Error
		},
	}, {
		// Served since issue 14: set, then described below.
		name: "AlterClientQuotas",
		call: func() (error, error) {
			resp, err := cl.AlterClientQuotas(ctx, &kafka.AlterClientQuotasRequest{Addr: addr, Entries: []kafka.AlterClientQuotaEntry{{
				Entities: []kafka.AlterClientQuotaEntity{{EntityType: "client-id", EntityName: "app"}},
				Ops:      []kafka.AlterClientQuotaOps{{Key: "producer_byte_rate", Value: 1024}},
			}}})
			if err != nil {
				return err, nil
			}
			if len(resp.Entries) != 1 || len(resp.Entries[0].Entities) != 1 || resp.Entries[0].Entities[0].EntityName != "app" {
				return fmt.Errorf("entries %+v, want the one entity asked for", resp.Entries), nil
			}
			return nil, resp.Entries[0].Error
		},
	}, {
		// Served since issue 14: the quota set above.
		name: "DescribeClientQuotas",
		call: func() (error, error) {
			resp, err := cl.DescribeClientQuotas(ctx, &kafka.DescribeClientQuotasRequest{Addr: addr})
			if err != nil {
				return err, nil
			}
			if len(resp.Entries) != 1 || len(resp.Entries[0].Values) != 1 || resp.Entries[0].Values[0].Value != 1024 {
				return fmt.Errorf("entries %+v, want the quota set", resp.Entries), nil
			}
			return nil, nil
		},
	}, {
		name: "AlterPartitionReassignments", want: kafka.UnsupportedVersion,
		call: func() (error, error) {
			resp, err := cl.AlterPartitionReassignments(ctx, &kafka.AlterPartitionReassignmentsRequest{Addr: addr, Topic: "t",
				Assignments: []kafka.AlterPartitionReassignmentsRequestAssignment{{PartitionID: 0, BrokerIDs: []int{1}}}})
			if err != nil {
				return err, nil
			}
			return nil, resp.Error
		},
	}, {
		name: "ListPartitionReassignments", want: kafka.UnsupportedVersion,
		call: func() (error, error) {
			resp, err := cl.ListPartitionReassignments(ctx, &kafka.ListPartitionReassignmentsRequest{Addr: addr,
				Topics: map[string]kafka.ListPartitionReassignmentsRequestTopic{"t": {PartitionIndexes: []int{0}}}})
			if err != nil {
				return err, nil
			}
			return nil, resp.Error
		},
	}, {
		// Served since issue 12: an unknown user's credentials.
		name: "DescribeUserScramCredentials", want: kafka.ResourceNotFound,
		call: func() (error, error) {
			resp, err := cl.DescribeUserScramCredentials(ctx, &kafka.DescribeUserScramCredentialsRequest{Addr: addr,
				Users: []kafka.UserScramCredentialsUser{{Name: "ann"}}})
			if err != nil {
				return err, nil
			}
			if resp.Error != nil {
				return nil, resp.Error
			}
			if len(resp.Results) != 1 || resp.Results[0].User != "ann" {
				return fmt.Errorf("results %+v, want one for ann", resp.Results), nil
			}
			return nil, resp.Results[0].Error
		},
	}, {
		// Served since issue 12: deleting a credential that is not there.
		name: "AlterUserScramCredentials", want: kafka.ResourceNotFound,
		call: func() (error, error) {
			resp, err := cl.AlterUserScramCredentials(ctx, &kafka.AlterUserScramCredentialsRequest{Addr: addr,
				Deletions: []kafka.UserScramCredentialsDeletion{{Name: "ann", Mechanism: kafka.ScramMechanismSha256}}})
			if err != nil {
				return err, nil
			}
			if len(resp.Results) != 1 || resp.Results[0].User != "ann" {
				return fmt.Errorf("results %+v, want one for ann", resp.Results), nil
			}
			return nil, resp.Results[0].Error
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transportErr, apiErr := tt.call()
			if transportErr != nil {
				t.Fatalf("call failed: %v; want a response carrying the API's error", transportErr)
			}
			if tt.want != 0 && !errors.Is(apiErr, tt.want) {
				t.Fatalf("error %v, want %v", apiErr, tt.want)
			}
		})
	}
	// The client, and its connection, still work.
	if _, err := cl.Metadata(ctx, &kafka.MetadataRequest{Addr: addr}); err != nil {
		t.Fatalf("metadata after the unserved calls: %v", err)
	}
}

// unservedFill sets every field of struct v: numbers to 1, strings to
// "x", one element in every array.
func unservedFill(v reflect.Value) {
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Version" || name == "UnknownTags" {
			continue
		}
		unservedFillValue(v.Field(i))
	}
}

func unservedFillValue(f reflect.Value) {
	switch f.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.SetInt(1)
	case reflect.Uint16:
		f.SetUint(1)
	case reflect.Float64:
		f.SetFloat(1)
	case reflect.String:
		f.SetString("x")
	case reflect.Struct:
		unservedFill(f)
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
		unservedFillValue(f.Elem())
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.Uint8 {
			f.SetBytes([]byte{1})
			return
		}
		e := reflect.New(f.Type().Elem()).Elem()
		unservedFillValue(e)
		f.Set(reflect.Append(f, e))
	}
}

// unservedErrorCodes appends every ErrorCode in struct v and below it.
func unservedErrorCodes(v reflect.Value, out []int16) []int16 {
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case v.Type().Field(i).Name == "ErrorCode":
			out = append(out, int16(f.Int()))
		case f.Kind() == reflect.Struct:
			out = unservedErrorCodes(f, out)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			for j := range f.Len() {
				out = unservedErrorCodes(f.Index(j), out)
			}
		}
	}
	return out
}
