#!/usr/bin/env bats
# kineto2graph on the real Kineto traces in ../shared/traces: each one
# converts, and the tasks it keeps, counted by kind, equal an independent
# count made from the JSON by tests/tools/kineto_counts.py (which follows
# the rules of kineto2graph(1), not its code). The counter is itself
# checked first, on a small trace whose counts are worked out by hand.

load helpers

COUNTS="$ROOT/tests/tools/kineto_counts.py"

# The Kineto traces: every JSON file but the execution traces and the
# manifest, sorted so failures read in a stable order.
kineto_traces() {
	find "$TRACES" \( -name '*.json' -o -name '*.json.gz' \) \
		! -name '*_et.json.gz' ! -name MANIFEST.json | sort
}

# Tasks by kind in a stream, in kineto_counts.py's format.
task_counts() {
	graphcat "$1" | jq -rn '
		reduce (inputs | select(.r == "task") | .k) as $k ({}; .[$k] += 1) |
		"cpu=\(.cpu // 0) rt=\(.rt // 0) kern=\(.kern // 0) coll=\(.coll // 0) cpy=\(.cpy // 0) set=\(.set // 0)"'
}

# graphcat FILE into ./dump (too big for `run` to hold).
decode() {
	graphcat "$1" >dump
}

# Fail unless $1 (actual) equals $2 (expected), showing both.
same() {
	if [ "$1" != "$2" ]; then
		printf 'expected: %s\nactual:   %s\n' "$2" "$1"
		return 1
	fi
}

# A hand-made trace exercising each counting rule once. ProfilerStep#1
# [100,200) is cut to [100,195) by ProfilerStep#2 [195,300).
#   cpu:  inner (leaf inside outer); outer holds a runtime call, so no
#         leaf; add starts at 196, in step 2; backward on thread 2 spans
#         thread 1's launch but holds nothing of its own thread; legacy
#         Operator on a string tid; before (ts 50) is in no step.
#   rt:   three calls in steps and a legacy Runtime one; the call at 60 is
#         in no step.
#   kern: gemm runs at 400 (no step) but its launch is in step 1; the
#         legacy Kernel takes step 2 from its launch; my_ncclKernel_x is
#         not NCCL (prefix only); early's launch is in no step, so it goes
#         although it runs inside step 1.
#   coll: ncclDevKernel_ with no launch runs at 250 (step 2);
#         ncclKernel_ at 500 has no launch and no step.
#   cpy, set: one each, launched in step 2.
# Expected: cpu=4 rt=4 kern=3 coll=1 cpy=1 set=1.
rules_trace() {
	cat >rules.json <<-'EOF'
	{"traceEvents": [
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 195, "dur": 105},
	{"ph": "X", "cat": "cpu_op", "name": "before", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 60, "dur": 1, "args": {"correlation": 10}},
	{"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 110, "dur": 40},
	{"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 112, "dur": 8},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 125, "dur": 5, "args": {"correlation": 1}},
	{"ph": "X", "cat": "cpu_op", "name": "backward", "pid": 1, "tid": 2, "ts": 120, "dur": 70},
	{"ph": "X", "cat": "cpu_op", "name": "add", "pid": 1, "tid": 1, "ts": 196, "dur": 3},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 210, "dur": 5, "args": {"correlation": 2}},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 216, "dur": 1, "args": {"correlation": 3}},
	{"ph": "X", "cat": "Operator", "name": "legacy_op", "pid": 1, "tid": "7", "ts": 230, "dur": 10},
	{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "7", "ts": 250, "dur": 1, "args": {"correlation": 7}},
	{"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": 150, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 10}},
	{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 400, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}},
	{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 220, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2, "bytes": 64}},
	{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 226, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 3, "bytes": 64}},
	{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 20, "ts": 250, "dur": 9, "args": {"device": 0, "stream": 20, "correlation": 4}},
	{"ph": "X", "cat": "kernel", "name": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, "ts": 500, "dur": 9, "args": {"device": 0, "stream": 20, "correlation": 5}},
	{"ph": "X", "cat": "kernel", "name": "my_ncclKernel_x", "pid": 0, "tid": 7, "ts": 260, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 6}},
	{"ph": "X", "cat": "Kernel", "name": "legacy_kernel", "pid": 0, "tid": "stream 7", "ts": 600, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 7}},
	{"ph": "f", "cat": "ac2g", "name": "launch", "id": 1, "pid": 0, "tid": 7, "ts": 400},
	{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}
	]}
	EOF
}

# aten::item calls aten::_local_scalar_dense: in param_dlrm_8rank_v100
# worker0, item at ts 1694128201440676 lasts 2 us with its callee
# starting 1 us in. At Kineto's microsecond clock both often last 0 at
# one instant (594 pairs in these traces, e.g. that worker at ts
# 1694128201427028), item first in the file, as a parent is. One leaf per
# call: cpu=2. (kineto2graph(1) says "an event that starts before the
# innermost open op ends is inside it", so a zero-length op never holds
# anything and both become tasks.)
zero_trace() {
	cat >zero.json <<-'EOF'
	{"traceEvents": [
	{"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
	{"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": 1, "tid": 1, "ts": 11, "dur": 0},
	{"ph": "X", "cat": "cpu_op", "name": "aten::item", "pid": 1, "tid": 1, "ts": 20, "dur": 0},
	{"ph": "X", "cat": "cpu_op", "name": "aten::_local_scalar_dense", "pid": 1, "tid": 1, "ts": 20, "dur": 0}
	]}
	EOF
}

@test "kineto_counts.py: counts a hand-made trace as worked out by hand" {
	rules_trace
	run -0 --separate-stderr python3 "$COUNTS" rules.json
	same "$output" "cpu=4 rt=4 kern=3 coll=1 cpy=1 set=1"
	same "$stderr" ""
	gzip -n <rules.json >rules.json.gz
	run -0 --separate-stderr python3 "$COUNTS" rules.json.gz
	same "$output" "cpu=4 rt=4 kern=3 coll=1 cpy=1 set=1"
}

@test "kineto_counts.py: a zero-length op that starts with its callee is no leaf" {
	zero_trace
	run -0 --separate-stderr python3 "$COUNTS" zero.json
	same "$output" "cpu=2 rt=0 kern=0 coll=0 cpy=0 set=0"
}

@test "kineto_counts.py: a file without traceEvents is refused" {
	printf '{"schema": "1.0.1", "nodes": []}' >et.json
	run -1 --separate-stderr python3 "$COUNTS" et.json
	same "$output" ""
	same "$stderr" "kineto_counts.py: et.json: not a Kineto trace (no traceEvents array)"
}

@test "kineto2graph: keeps the tasks of a hand-made trace as worked out by hand" {
	rules_trace
	run -0 --separate-stderr kineto2graph -q -o rules.kg rules.json
	same "$stderr" ""
	same "$(task_counts rules.kg)" "cpu=4 rt=4 kern=3 coll=1 cpy=1 set=1"
}

@test "kineto2graph: a zero-length op that starts with its callee is no leaf" {
	zero_trace
	run -0 --separate-stderr kineto2graph -q -o zero.kg zero.json
	same "$(task_counts zero.kg)" "cpu=2 rt=0 kern=0 coll=0 cpy=0 set=0"
}

@test "kineto2graph: finds every Kineto trace that MANIFEST.json lists" {
	need_traces
	jq -r '.[].staged | select(test("\\.json(\\.gz)?$")) | select(test("_et\\.json\\.gz$") | not)' \
		"$TRACES/MANIFEST.json" | sort >listed
	kineto_traces | sed "s|^$TRACES/||" >found
	[ -s listed ]
	diff listed found
}

@test "kineto2graph: converts every real Kineto trace with exit 0 into a whole stream" {
	need_traces
	local f n=0
	while IFS= read -r f; do
		run -0 --separate-stderr kineto2graph -q -o t.kg "$f"
		same "$stderr" ""
		run -0 --separate-stderr decode t.kg
		same "$stderr" ""
		same "$(tail -n 1 dump | cut -d, -f1)" '{"r":"end"'
		n=$((n + 1))
	done < <(kineto_traces)
	[ "$n" -gt 0 ]
}

@test "kineto2graph: tasks by kind on every real Kineto trace equal an independent count from the JSON" {
	need_traces
	local f want got bad=0
	while IFS= read -r f; do
		run -0 kineto2graph -q -o t.kg "$f"
		run -0 python3 "$COUNTS" "$f"
		want=$output
		got=$(task_counts t.kg)
		if [ "$got" != "$want" ]; then
			printf '%s\n  kineto2graph %s\n  JSON         %s\n' "${f#"$TRACES"/}" "$got" "$want"
			bad=1
		fi
	done < <(kineto_traces)
	[ "$bad" -eq 0 ]
}

@test "kineto2graph: an execution trace is refused as not a Kineto trace" {
	need_traces
	local f n=0
	while IFS= read -r f; do
		run -1 --separate-stderr kineto2graph -o t.kg "$f"
		same "$output" ""
		same "$stderr" "kineto2graph: $f: not a Kineto trace (no traceEvents array)"
		[ ! -e t.kg ]
		n=$((n + 1))
	done < <(find "$TRACES" -name '*_et.json.gz' | sort)
	[ "$n" -eq "$(jq '[.[].staged | select(endswith("_et.json.gz"))] | length' "$TRACES/MANIFEST.json")" ]
}

# MANIFEST.json is a JSON array: the Chrome trace format's bare-array
# form, which kineto2graph reads as a list of events. None has a "ph".
@test "kineto2graph: MANIFEST.json is refused as not a Kineto trace" {
	need_traces
	run -1 --separate-stderr kineto2graph -o t.kg "$TRACES/MANIFEST.json"
	same "$output" ""
	same "$stderr" "kineto2graph: $TRACES/MANIFEST.json: no trace events (not a Kineto trace?)"
	[ ! -e t.kg ]
}
