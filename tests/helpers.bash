# Shared by every tests/*.bats: load it with `load helpers`.
#
# Each test runs in its own $BATS_TEST_TMPDIR with the built tools first
# on PATH. TRACES is ../shared/traces beside the repository; FIX the
# project's own fixtures.

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
TRACES=$(cd "$ROOT/../shared/traces" 2>/dev/null && pwd || echo "$ROOT/../shared/traces")
FIX="$ROOT/tests/fixtures"
export LC_ALL=C
bats_require_minimum_version 1.5.0
PATH="$ROOT/bin:$PATH"

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
}

need_traces() {
	[ -d "$TRACES" ] || skip "no ../shared/traces"
}

# The GPT traces recorded on an H100 for kgraph (../shared/gpu/README.md).
GPU=$(cd "$ROOT/../shared/gpu/traces" 2>/dev/null && pwd || echo "$ROOT/../shared/gpu/traces")

need_gpu() {
	[ -d "$GPU" ] || skip "no ../shared/gpu/traces"
}

# The decoded stream, names resolved: what tests compare.
dump() {
	graphcat -r "$@"
}

# Lines of "SRC_NAME -> DST_NAME KIND [how]" for a stream's edges, so
# expectations can be written by task name.
edges_by_name() {
	graphcat -r "$@" | jq -r '
		if .r == "header" then empty
		elif .r == "task" then "T\t\(.id)\t\(.n)"
		elif .r == "edge" then "E\t\(.src)\t\(.dst)\t\(.k)\t\(.how // "trace")"
		else empty end' |
	awk -F'\t' '$1 == "T" { n[$2] = $3; next }
		$1 == "E" { print n[$2] " -> " n[$3] " " $4 " " $5 }'
}

# A coverage count from a stream (0 when absent).
cov() {
	graphcat "$2" | jq -r --arg k "$1" 'select(.r == "cov") | .c[$k] // 0'
}
