package broker

// Requests for the APIs that Kafka 4.x brokers serve to clients and samsa
// does not (issue 15; the ledger is docs/compatibility.md, "API ledger").
//
// Such a request is decoded and answered with a well-formed response of
// the requested version carrying an error code on every element the
// client reads, so that the client's call fails with that error instead
// of seeing the connection close: kafka-go, for one, sends a request for
// a key the broker did not advertise at version 0 and reported "unexpected
// EOF". The response mirrors the request's items as Kafka's would: a
// DeleteRecords response lists each requested partition with the error, a
// DescribeTransactions response has one state per transactional id, a
// ConsumerGroupDescribe response one group per id. The code is the one
// Kafka itself answers with when a broker lacks the feature where there is
// one (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED for the token requests on a
// PLAINTEXT listener), UNSUPPORTED_VERSION otherwise, as
// Kafka answers the APIs it has switched off (telemetry without a metrics
// plugin, share groups, KIP-848 groups when disabled). Where the response
// has an error message it names the samsa issue that will add the API.
//
// These keys are never advertised in ApiVersions: a client that negotiates
// keeps seeing them as unsupported and never sends them. Every version
// from 0 to Kafka 4.x's highest (capped at kmsg's) is answered, although
// Kafka 4.x no longer serves the oldest ones of some (KIP-896): a client
// told nothing of a key (kafka-go) sends version 0.
//
// The responses are built by reflection over the kmsg request and
// response structs, under these rules:
//
//   - A response array of structs that carry an error code (in the element
//     or below it) is filled from the request array of the same name, or
//     the one(s) named in unservedAPI.from, one element per request
//     element; inside such an element, every array of the same name is
//     mirrored too.
//   - A mirrored element copies the request element's fields of the same
//     name and type (Topic, Partition, TopicID, GroupID...; a string into a
//     nullable string), or of the name in from (User from Name); a scalar
//     request element (a partition in []int32, a group id in []string)
//     fills the element's first field of its type.
//   - Then every ErrorCode in the response is set to the code and every
//     ErrorMessage to the message.
//
// Keys that Kafka serves only to controllers or to other brokers
// (BrokerHeartbeat, Vote, AlterPartition...) and the ZooKeeper-era ones
// Kafka 4.x removed (LeaderAndIsr, StopReplica...) are not in the table:
// they close the connection, as a Kafka broker's client listener does.

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/protocol"
)

// unservedAPI is how samsa answers an API it does not serve.
type unservedAPI struct {
	// kafkaMin and kafkaMax are the versions Kafka 4.x brokers serve
	// (kafkaMin as of 4.0's KIP-896 removals, kafkaMax as of the newest
	// 4.x); samsa answers 0 to min(kafkaMax, kmsg's highest).
	kafkaMin, kafkaMax int16
	// code is the error code every element of the response carries.
	code int16
	// issue is the samsa issue that will add the API, 0 if none plans it.
	issue int
	// from names, for a response field, the request field(s) it is
	// filled from when their names differ; a dotted path flattens nested
	// arrays ("Dirs.Topics").
	from map[string][]string
}

var (
	unsupported = kerr.UnsupportedVersion.Code
	noTokens    = kerr.DelegationTokenRequestNotAllowed.Code
)

// fromField is an unservedAPI.from for one response field filled from
// request fields of other names.
func fromField(response string, request ...string) map[string][]string {
	return map[string][]string{response: request}
}

// unserved lists, by key, the APIs Kafka 4.x brokers serve to clients and
// samsa does not. A key must not be both here and in apis.
var unserved = map[int16]unservedAPI{
	// Delegation tokens: no issue plans them (issue 12 leaves them out).
	38: {kafkaMin: 1, kafkaMax: 3, code: noTokens}, // CreateDelegationToken
	39: {kafkaMin: 1, kafkaMax: 2, code: noTokens}, // RenewDelegationToken
	40: {kafkaMin: 1, kafkaMax: 2, code: noTokens}, // ExpireDelegationToken
	41: {kafkaMin: 1, kafkaMax: 3, code: noTokens}, // DescribeDelegationToken

	// Not planned by any issue yet.
	34: {kafkaMin: 1, kafkaMax: 2, code: unsupported, from: fromField("Topics", "Dirs.Topics")},     // AlterReplicaLogDirs
	45: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                               // AlterPartitionReassignments
	46: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // ListPartitionReassignments
	55: {kafkaMin: 0, kafkaMax: 2, code: unsupported},                                               // DescribeQuorum
	57: {kafkaMin: 0, kafkaMax: 2, code: unsupported, from: fromField("Results", "FeatureUpdates")}, // UpdateFeatures
	64: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // UnregisterBroker
	68: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                               // ConsumerGroupHeartbeat (KIP-848)
	69: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                               // ConsumerGroupDescribe (KIP-848)
	71: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // GetTelemetrySubscriptions
	72: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // PushTelemetry
	74: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                               // ListConfigResources
	75: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // DescribeTopicPartitions
	80: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                               // AddRaftVoter
	81: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // RemoveRaftVoter
	94: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                               // UnregisterController

	// Share groups (KIP-932).
	76: {kafkaMin: 1, kafkaMax: 1, code: unsupported},                                        // ShareGroupHeartbeat
	77: {kafkaMin: 1, kafkaMax: 1, code: unsupported, from: fromField("Groups", "GroupIDs")}, // ShareGroupDescribe
	78: {kafkaMin: 1, kafkaMax: 2, code: unsupported},                                        // ShareFetch
	79: {kafkaMin: 1, kafkaMax: 2, code: unsupported},                                        // ShareAcknowledge
	83: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                        // InitializeShareGroupState
	84: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                        // ReadShareGroupState
	85: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                        // WriteShareGroupState
	86: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                        // DeleteShareGroupState
	87: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                        // ReadShareGroupStateSummary
	90: {kafkaMin: 0, kafkaMax: 1, code: unsupported},                                        // DescribeShareGroupOffsets
	91: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                        // AlterShareGroupOffsets
	92: {kafkaMin: 0, kafkaMax: 0, code: unsupported},                                        // DeleteShareGroupOffsets

	// Streams groups (KIP-1071).
	88: {kafkaMin: 0, kafkaMax: 1, code: unsupported}, // StreamsGroupHeartbeat
	89: {kafkaMin: 0, kafkaMax: 1, code: unsupported}, // StreamsGroupDescribe
	93: {kafkaMin: 0, kafkaMax: 0, code: unsupported}, // StreamsGroupTopologyDescriptionUpdate
}

// unservedRange is the version range samsa decodes for an unserved key.
func unservedRange(key int16) (min, max int16, ok bool) {
	u, ok := unserved[key]
	if !ok {
		return 0, 0, false
	}
	max = u.kafkaMax
	if req := kmsg.RequestForKey(key); req == nil {
		return 0, 0, false
	} else if req.MaxVersion() < max {
		max = req.MaxVersion()
	}
	return 0, max, true
}

// handleUnserved answers a request for an unserved API.
func handleUnserved(req *protocol.Request) protocol.Response {
	u, ok := unserved[req.Key]
	if !ok {
		return protocol.Response{Close: true}
	}
	return reply(unservedResponse(req.Body, u))
}

// unservedMessage is the error message of an unserved API's responses.
func unservedMessage(key int16, u unservedAPI) string {
	msg := fmt.Sprintf("samsa does not serve %s", kmsg.NameForKey(key))
	if u.issue != 0 {
		return fmt.Sprintf("%s yet (samsa issue %d)", msg, u.issue)
	}
	return msg
}

// unservedResponse builds the response to req described in this file's
// comment.
func unservedResponse(req kmsg.Request, u unservedAPI) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	dst := reflect.ValueOf(resp).Elem()
	mirrorArrays(reflect.ValueOf(req).Elem(), dst, u.from, false)
	setErrors(dst, u.code, unservedMessage(req.Key(), u))
	return resp
}

// mirrorArrays fills dst's arrays of structs from src's arrays (see the
// rules above); nested reports whether dst is itself a mirrored element.
func mirrorArrays(src, dst reflect.Value, from map[string][]string, nested bool) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		if !nested && !carriesError(f.Type.Elem()) {
			continue
		}
		out := dst.Field(i)
		for _, s := range sourceElements(src, f.Name, from) {
			d := newElement(f.Type.Elem())
			if s.Kind() == reflect.Struct {
				copyFields(s, d, from)
				mirrorArrays(s, d, from, true)
			} else {
				setFirstOfType(d, s)
			}
			out.Set(reflect.Append(out, d))
		}
	}
}

// sourceElements returns the elements of src's array(s) that the response
// field name is filled from.
func sourceElements(src reflect.Value, name string, from map[string][]string) []reflect.Value {
	paths, ok := from[name]
	if !ok {
		paths = []string{name}
	}
	var out []reflect.Value
	for _, p := range paths {
		out = appendPath(out, src, p)
	}
	return out
}

// appendPath appends the elements at the dotted path in v (a struct),
// flattening the arrays along it.
func appendPath(out []reflect.Value, v reflect.Value, path string) []reflect.Value {
	head, rest, more := cut(path)
	f := v.FieldByName(head)
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return out
	}
	for j := range f.Len() {
		e := f.Index(j)
		if !more {
			out = append(out, e)
		} else if e.Kind() == reflect.Struct {
			out = appendPath(out, e, rest)
		}
	}
	return out
}

func cut(path string) (head, rest string, more bool) {
	for i := range len(path) {
		if path[i] == '.' {
			return path[:i], path[i+1:], true
		}
	}
	return path, "", false
}

// copyFields copies src's scalar fields into dst's fields of the same name
// (or the name given in from) and type.
func copyFields(src, dst reflect.Value, from map[string][]string) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if isErrorField(f.Name) || f.Name == "UnknownTags" {
			continue
		}
		name := f.Name
		if names, ok := from[name]; ok && len(names) == 1 {
			name = names[0]
		}
		s := src.FieldByName(name)
		if !s.IsValid() {
			continue
		}
		d := dst.Field(i)
		switch {
		case s.Type() == f.Type && isScalar(f.Type):
			d.Set(s)
		case s.Kind() == reflect.String && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			str := s.String()
			d.Set(reflect.ValueOf(&str))
		}
	}
}

// setFirstOfType sets the first non-error field of dst whose type is s's.
func setFirstOfType(dst, s reflect.Value) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if f.Type == s.Type() && !isErrorField(f.Name) {
			dst.Field(i).Set(s)
			return
		}
	}
}

// setErrors sets every ErrorCode in v (a struct) and the structs below it
// to code and every ErrorMessage to msg.
func setErrors(v reflect.Value, code int16, msg string) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		fv := v.Field(i)
		switch {
		case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
			fv.SetInt(int64(code))
		case f.Name == "ErrorMessage" && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.String:
			m := msg
			fv.Set(reflect.ValueOf(&m))
		case f.Type.Kind() == reflect.Struct:
			setErrors(fv, code, msg)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			for j := range fv.Len() {
				setErrors(fv.Index(j), code, msg)
			}
		}
	}
}

// carriesError reports whether struct type t has an ErrorCode field, in
// itself or in the structs and arrays below it.
func carriesError(t reflect.Type) bool {
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Name == "ErrorCode":
			return true
		case f.Type.Kind() == reflect.Struct && carriesError(f.Type):
			return true
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && carriesError(f.Type.Elem()):
			return true
		}
	}
	return false
}

// newElement returns a new kmsg struct of type t with its defaults set
// (kmsg's Default method, as kmsg.NewXxx does).
func newElement(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return p.Elem()
}

func isErrorField(name string) bool { return name == "ErrorCode" || name == "ErrorMessage" }

// isScalar reports whether t is a type copyFields copies: numbers, bools,
// strings, nullable strings and fixed arrays (UUIDs).
func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint16, reflect.Float64, reflect.String, reflect.Array:
		return true
	case reflect.Pointer:
		return t.Elem().Kind() == reflect.String
	}
	return false
}
