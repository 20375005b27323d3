#!/usr/bin/env bash
# Runs IBM/sarama's own functional tests (the Test functions of its
# functional_*_test.go files, build tag `functional`) against five samsa
# brokers and prints a per-test summary. The sarama version is the one
# samsa's go.mod requires. Results and the reason for every failure are in
# docs/compatibility.md.
#
#   test/compat/sarama.sh [go test flags, e.g. -run TestFuncClientMetadata]
#
# sarama's TestMain wants either Docker (five Kafka brokers behind
# toxiproxy) or TOXIPROXY_ADDR plus KAFKA_VERSION for an existing cluster,
# whose brokers it then expects at the proxies' fixed addresses
# 127.0.0.1:29091-29095 (hard-coded in its functional_test.go). So the five
# brokers listen on those addresses themselves, and TOXIPROXY_ADDR points
# at toxiproxystub, which reports them as the proxies and refuses every
# fault injection. Five, not three: with a producer's Metadata.Full off,
# sarama sends InitProducerId to a random seed, and any of the five must
# answer. The brokers' settings are those of sarama's docker-compose.yml
# (default and offsets replication factor 2, no topic auto-creation, no
# initial rebalance delay, rack = node id); KAFKA_VERSION is 4.3.1, that
# file's default. Tests that inject faults through toxiproxy or stop
# brokers with `docker compose` are skipped ($skip below), and so are the
# transactions tests (issue 13); those that need `docker compose exec`
# skip themselves.
#
# Needs 127.0.0.1 ports 29091-29095, 29191-29193, 29291-29293 and 28474
# free. Takes about 3 minutes; not part of `go test ./...`.
source "$(dirname "$0")/lib.sh"

api=127.0.0.1:28474
for port in 29091 29092 29093 29094 29095 29191 29192 29193 29291 29292 29293 28474; do
	if compat_port_in_use "$port"; then
		echo "port $port is in use" >&2
		exit 1
	fi
done

compat_module github.com/IBM/sarama sarama

go build -o "$work/samsa" ./cmd/samsa
go build -o "$work/toxiproxystub" ./test/compat/toxiproxystub

stub_args=(-listen "$api")
for n in 1 2 3 4 5; do
	stub_args+=(-proxy "kafka$n=127.0.0.1:2909$n")
done
"$work/toxiproxystub" "${stub_args[@]}" >"$work/toxiproxystub.log" 2>&1 &
pids+=($!)

cluster=samsa-1=http://127.0.0.1:29291,samsa-2=http://127.0.0.1:29292,samsa-3=http://127.0.0.1:29293
endpoints=http://127.0.0.1:29191,http://127.0.0.1:29192,http://127.0.0.1:29193
bootstrap=127.0.0.1:29091,127.0.0.1:29092,127.0.0.1:29093
start_broker() {
	local n=$1
	shift
	"$work/samsa" server --node-id "$n" --data-dir "$work/data$n" \
		--listeners "PLAINTEXT://127.0.0.1:2909$n" \
		--override "broker.rack=$n" \
		--override "metrics.listener=http://127.0.0.1:2969$n" \
		--override default.replication.factor=2 \
		--override offsets.topic.replication.factor=2 \
		--override auto.create.topics.enable=false \
		--override group.initial.rebalance.delay.ms=0 \
		"$@" >"$work/broker$n.log" 2>&1 &
	pids+=($!)
}
# wait_alive N: until N brokers are registered and alive.
wait_alive() {
	for _ in $(seq 120); do
		if "$work/samsa" cluster describe --timeout 2s -b "$bootstrap" 2>/dev/null |
			awk '$4 == "yes"' | grep -c . | grep -qx "$1"; then
			return 0
		fi
		for pid in "${pids[@]}"; do
			kill -0 "$pid" 2>/dev/null || { tail -n 20 "$work"/*.log; exit 1; }
		done
		sleep 0.5
	done
	echo "$1 brokers did not come up" >&2
	tail -n 20 "$work"/*.log
	exit 1
}
# Brokers 1-3 form the embedded etcd cluster; 4 and 5 use it as clients.
for n in 1 2 3; do
	start_broker "$n" \
		--override "metadata.etcd.client.url=http://127.0.0.1:2919$n" \
		--override "metadata.etcd.peer.url=http://127.0.0.1:2929$n" \
		--override "metadata.etcd.initial.cluster=$cluster"
done
wait_alive 3
for n in 4 5; do
	start_broker "$n" --metadata-endpoints "$endpoints"
done
wait_alive 5

# Harness environment: these tests add toxiproxy toxics (latency,
# reset_peer), disable a proxy, stop and start a broker with
# `docker compose stop/start`, or read a broker's log with `docker compose
# logs` (TestFuncIdempotentBufferedSequence).
skip='^(TestFuncConnectionFailure|TestFuncAdminNetworkErrorClosesControllerConnection'
skip+='|TestFuncProducing|TestFuncProducingGzip|TestFuncProducingSnappy|TestFuncProducingZstd'
skip+='|TestFuncProducingNoResponse|TestFuncProducingFlushing|TestFuncProducingIdempotentWithBrokerFailure'
skip+='|TestAsyncProducerRemoteBrokerClosed|TestFuncTxnProduceWithBrokerFailure'
skip+='|TestFuncAdminListConsumerGroupOffsets|TestConsumerFetchFollowerFailover|TestFuncIdempotentBufferedSequence)$'
# Only the functional tests, not the unit tests of the same package.
run="^($(cd "$work/sarama" && grep -ho '^func Test[A-Za-z0-9_]*' functional_*_test.go | sed 's/^func //' | sort -u | paste -sd '|'))\$"

cd "$work/sarama"
status=0
TOXIPROXY_ADDR="http://$api" KAFKA_VERSION=4.3.1 \
	go test -tags functional -count=1 -timeout 25m -v -run "$run" -skip "$skip" "$@" . >"$work/out.txt" 2>&1 || status=$?
cp "$work/out.txt" "$repo/test/compat/sarama.out" 2>/dev/null || true
for n in 1 2 3 4 5; do cp "$work/broker$n.log" "$repo/test/compat/sarama-broker$n.out" 2>/dev/null || true; done
compat_summary "sarama $version functional tests" "$work/out.txt" "$skip"
echo "full output: test/compat/sarama.out (broker logs: test/compat/sarama-broker[1-5].out)"
exit "$status"
