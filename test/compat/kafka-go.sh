#!/usr/bin/env bash
# Runs segmentio/kafka-go's own test suite (its root package, as its CI runs
# it with KAFKA_VERSION=3.7.0) against one samsa broker on localhost:9092,
# the address the suite expects, with ACL authorization on and
# allow.everyone.if.no.acl.found as in the suite's docker-compose files,
# and prints a per-test summary. The kafka-go
# version is the one samsa's go.mod requires. Results and the reason for
# every failure are in docs/compatibility.md.
#
#   test/compat/kafka-go.sh [go test flags, e.g. -run TestClient]
#
# Needs port 9092 free (the embedded etcd takes free ports). Takes about 5
# minutes; not part of `go test ./...`.
source "$(dirname "$0")/lib.sh"

if compat_port_in_use 9092; then
	echo "port 9092 is in use" >&2
	exit 1
fi
compat_module github.com/segmentio/kafka-go kafka-go

go build -o "$work/samsa" ./cmd/samsa
"$work/samsa" server --data-dir "$work/data" \
	--override metadata.etcd.client.url=http://127.0.0.1:0 \
	--override metadata.etcd.peer.url=http://127.0.0.1:0 \
	--override auto.create.topics.enable=true --override num.partitions=1 \
	--override authorizer.class.name=kafka.security.authorizer.AclAuthorizer \
	--override allow.everyone.if.no.acl.found=true \
	>"$work/broker.log" 2>&1 &
pids+=($!)
compat_wait_port 9092 "${pids[-1]}" "$work/broker.log"

cd "$work/kafka-go"
go mod tidy >/dev/null 2>&1
status=0
# The suite's getOffsets helper calls a ConsumerGroup built without its
# connect function: a nil-pointer panic whatever the broker, which would end
# the run. The three tests that call it are skipped unless a -skip of the
# caller's replaces this one.
skip='TestReaderConsumerGroup/(consumer_group_commits_on_close|verify_offset_committed(_when_using_interval_committer)?)$'
KAFKA_VERSION=3.7.0 go test -count=1 -timeout 25m -v -skip "$skip" "$@" . >"$work/out.txt" 2>&1 || status=$?
cp "$work/out.txt" "$repo/test/compat/kafka-go.out" 2>/dev/null || true
cp "$work/broker.log" "$repo/test/compat/kafka-go.broker.out" 2>/dev/null || true
compat_summary "kafka-go $version" "$work/out.txt" ""
echo "full output: test/compat/kafka-go.out (the broker's log: kafka-go.broker.out)"
exit "$status"
