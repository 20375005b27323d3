# Shared by the scripts in test/compat (sourced, not run): a work directory
# removed on exit with every process started into pids, the client
# library's source copied out of the module cache, port checks, and the
# per-test summary every script prints.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$(pwd)
work=$(mktemp -d)
pids=()
compat_cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap compat_cleanup EXIT

# compat_module MODULE DIR copies MODULE, at the version samsa's go.mod
# requires, to $work/DIR (writable) and sets version.
compat_module() {
	version=$(go list -m -f '{{.Version}}' "$1")
	local src
	src=$(go mod download -json "$1@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	cp -r "$src" "$work/$2"
	chmod -R u+w "$work/$2"
}

# compat_port_in_use PORT: whether something listens on 127.0.0.1:PORT.
compat_port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# compat_wait_port PORT PID LOG waits up to 30 s for 127.0.0.1:PORT to
# listen, and fails showing LOG if PID exits first.
compat_wait_port() {
	for _ in $(seq 300); do
		if compat_port_in_use "$1"; then return 0; fi
		kill -0 "$2" 2>/dev/null || { cat "$3"; exit 1; }
		sleep 0.1
	done
	echo "nothing listens on 127.0.0.1:$1" >&2
	cat "$3"
	exit 1
}

# compat_summary TITLE OUT SKIP prints the counts of top-level tests in the
# go test -v output OUT, how many SKIP (a -skip pattern) leaves out, and
# the failures.
compat_summary() {
	echo "$1 against samsa: top-level tests"
	grep -E '^--- (PASS|FAIL|SKIP)' "$2" | awk '{print $2}' | sort | uniq -c
	if [ -n "$3" ]; then
		echo "not run (-skip in $0): $(tr '|' '\n' <<<"$3" | grep -c .) tests"
	fi
	echo "failed:"
	grep -E '^ *--- FAIL' "$2" || true
	if grep -E '^panic:' "$2"; then
		echo "(the suite panicked: tests after this point did not run)"
	fi
}
