#!/usr/bin/env bash
# Runs twmb/franz-go's own pkg/kgo test suite, whose integration tests run
# against the broker in KGO_SEEDS, against one samsa broker and prints a
# per-test summary. The franz-go version is the one samsa's go.mod requires.
# Results and the reason for every failure are in docs/compatibility.md.
#
#   test/compat/franz-go.sh [go test flags, e.g. -run TestGroupETL]
#
# The broker listens on 127.0.0.1:$SAMSA_COMPAT_PORT (default 19192), its
# embedded etcd on free ports. The environment is the one franz-go's CI
# gives its single-broker runs: KGO_TEST_RF=1 and the default record count.
# The suite skips its KIP-848 and share-group tests by itself when
# ApiVersions lacks ConsumerGroupHeartbeat v1 / ShareFetch v2. Takes
# about 3 minutes; not part of `go test ./...`.
source "$(dirname "$0")/lib.sh"
port=${SAMSA_COMPAT_PORT:-19192}

if compat_port_in_use "$port"; then
	echo "port $port is in use; set SAMSA_COMPAT_PORT" >&2
	exit 1
fi
compat_module github.com/twmb/franz-go franz-go

go build -o "$work/samsa" ./cmd/samsa
"$work/samsa" server --data-dir "$work/data" \
	--listeners "PLAINTEXT://127.0.0.1:$port" \
	--override metadata.etcd.client.url=http://127.0.0.1:0 \
	--override metadata.etcd.peer.url=http://127.0.0.1:0 \
	--override metrics.listener=http://127.0.0.1:0 \
	>"$work/broker.log" 2>&1 &
pids+=($!)
compat_wait_port "$port" "${pids[-1]}" "$work/broker.log"

# The suite's broker-dependent tests of unimplemented features skip
# themselves (see above); nothing is left out here.
cd "$work/franz-go/pkg/kgo"
status=0
KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RF=1 \
	go test -count=1 -timeout 25m -v "$@" . >"$work/out.txt" 2>&1 || status=$?
cp "$work/out.txt" "$repo/test/compat/franz-go.out" 2>/dev/null || true
cp "$work/broker.log" "$repo/test/compat/franz-go-broker.out" 2>/dev/null || true
compat_summary "franz-go $version pkg/kgo" "$work/out.txt" ""
echo "full output: test/compat/franz-go.out (broker log: test/compat/franz-go-broker.out)"
exit "$status"
