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
# ApiVersions lacks ConsumerGroupHeartbeat v1 / ShareFetch v2; transactions
# (TestTxnEtl, which has no such switch) are left out with -skip until
# issue 13. Takes about 10 minutes; not part of `go test ./...`.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
port=${SAMSA_COMPAT_PORT:-19192}
work=$(mktemp -d)
broker_pid=""
cleanup() {
	if [ -n "$broker_pid" ]; then
		kill "$broker_pid" 2>/dev/null || true
		wait "$broker_pid" 2>/dev/null || true
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
	echo "port $port is in use; set SAMSA_COMPAT_PORT" >&2
	exit 1
fi

version=$(go list -m -f '{{.Version}}' github.com/twmb/franz-go)
src=$(go mod download -json "github.com/twmb/franz-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$src" "$work/franz-go"
chmod -R u+w "$work/franz-go"

go build -o "$work/samsa" ./cmd/samsa
"$work/samsa" server --data-dir "$work/data" \
	--listeners "PLAINTEXT://127.0.0.1:$port" \
	--override metadata.etcd.client.url=http://127.0.0.1:0 \
	--override metadata.etcd.peer.url=http://127.0.0.1:0 \
	>"$work/broker.log" 2>&1 &
broker_pid=$!
for _ in $(seq 300); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	kill -0 "$broker_pid" 2>/dev/null || { cat "$work/broker.log"; exit 1; }
	sleep 0.1
done

# TestTxnEtl: transactions (issue 13). The suite's other broker-dependent
# tests of unimplemented features skip themselves (see above).
skip='^TestTxnEtl$'
cd "$work/franz-go/pkg/kgo"
status=0
KGO_SEEDS="127.0.0.1:$port" KGO_TEST_RF=1 \
	go test -count=1 -timeout 25m -v -skip "$skip" "$@" . >"$work/out.txt" 2>&1 || status=$?
cp "$work/out.txt" "$repo/test/compat/franz-go.out" 2>/dev/null || true
cp "$work/broker.log" "$repo/test/compat/franz-go-broker.out" 2>/dev/null || true
echo "franz-go $version pkg/kgo against samsa: top-level tests"
grep -E '^--- (PASS|FAIL|SKIP)' "$work/out.txt" | awk '{print $2}' | sort | uniq -c
echo "not run (\$skip in $0): $(tr '|' '\n' <<<"$skip" | grep -c .) tests"
echo "failed:"
grep -E '^ *--- FAIL' "$work/out.txt" || true
grep -E '^panic:' "$work/out.txt" && echo "(the suite panicked: tests after this point did not run)"
echo "full output: test/compat/franz-go.out (broker log: test/compat/franz-go-broker.out)"
exit "$status"
