#!/usr/bin/env bats
# kineto2graph: the command line, its inputs and outputs, and how it fails
# (the checklist of STYLE.md). Inputs are written here, small. Expected
# byte offsets are where YAJL stops: right after the token that is to
# blame, or at the end of the input for a truncated one. What traces
# become is tests/traces.bats' part.

load helpers

USAGE='usage: kineto2graph [-qv] [-o FILE] [--iteration N|all] [--rank R] [--layer-ops REGEX] [--step-time MS|R=MS,...] [--profiler-cost US] [--level N] [-j N] [FILE ...]'
TRY="Try 'kineto2graph --help' for more information."

# Fail unless $1 (actual) equals $2 (expected), showing both.
same() {
	if [ "$1" != "$2" ]; then
		printf 'expected: %s\nactual:   %s\n' "$2" "$1"
		return 1
	fi
}

# kineto2graph with its (binary) stdout in out.kg, for `run`.
k2g() {
	kineto2graph "$@" >out.kg
}

# The byte offset just after the first TOKEN ($2) in TEXT ($1).
after() {
	local head=${1%%"$2"*}
	echo $((${#head} + ${#2}))
}

# The decoded stream without the header's source, which names the input.
dump_nosrc() {
	graphcat "$1" | jq -c 'del(.source)'
}

# A small trace with two iterations: step 1 launches gemm, which runs in
# step 2's time but belongs to step 1 through its launch; relu is a leaf
# of step 2; orphan (no launch in the trace) runs in step 2; early is
# before any step. With --iteration all: rt, gemm, relu, orphan.
small_trace() {
	cat >"${1:-in.json}" <<-'EOF'
	{"traceEvents": [
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
	{"ph": "X", "cat": "cpu_op", "name": "early", "pid": 1, "tid": 1, "ts": 50, "dur": 10},
	{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 20},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 115, "dur": 5, "args": {"correlation": 1}},
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 200, "dur": 100},
	{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 210, "dur": 10},
	{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 205, "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 1}},
	{"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 250, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 99}}
	]}
	EOF
}

# A trace of N leaf ops with scattered times: its stream is large.
many_trace() {
	python3 - "$1" <<-'EOF'
	import random, sys
	random.seed(1)
	ev, ts = [], 0
	for i in range(int(sys.argv[1])):
	    d = random.randrange(1, 1000)
	    ev.append('{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":1,"ts":%d,"dur":%d}' % (i % 50, ts, d))
	    ts += d + random.randrange(100)
	open("many.json", "w").write('{"traceEvents":[' + ",".join(ev) + "]}")
	EOF
}

# bad_json TEXT MESSAGE: in.json holding TEXT makes kineto2graph exit 1
# with "kineto2graph: in.json: MESSAGE", nothing on stdout and no output
# file.
bad_json() {
	printf '%s' "$1" >in.json
	run -1 --separate-stderr kineto2graph -o out.kg in.json
	same "$output" ""
	same "$stderr" "kineto2graph: in.json: $2"
	[ ! -e out.kg ]
}

# An event with the given fields after ph, cat and name.
ev() {
	printf '{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a",%s}]}' "$1"
}

@test "kineto2graph: --help prints the usage line and every option on stdout and exits 0" {
	run -0 --separate-stderr kineto2graph --help
	same "${lines[0]}" "$USAGE"
	same "$stderr" ""
	local o
	for o in --output --iteration --rank --level --jobs --verbose --quiet --help --version; do
		[[ $output == *"$o"* ]] || { echo "--help lacks $o"; return 1; }
	done
	local help=$output
	run -0 --separate-stderr kineto2graph -h
	same "$output" "$help"
}

@test "kineto2graph: the usage line is the man page's SYNOPSIS" {
	command -v mandoc >/dev/null || skip "no mandoc"
	local synopsis
	synopsis=$(mandoc -T ascii -O width=200 "$ROOT/doc/kineto2graph.1" | col -b |
		sed -n '/^SYNOPSIS/{n;s/^ *//;p;q;}')
	same "usage: $synopsis" "$USAGE"
	run -0 --separate-stderr kineto2graph --help
	same "${lines[0]}" "usage: $synopsis"
}

@test "kineto2graph: --version prints the version its streams name as producer" {
	run -0 --separate-stderr kineto2graph --version
	same "$stderr" ""
	[[ $output =~ ^kineto2graph\ \(kgraph\)\ ([0-9]+\.[0-9]+)$ ]]
	local v=${BASH_REMATCH[1]}
	small_trace
	kineto2graph -q -o in.kg in.json
	same "$(graphcat in.kg | jq -r 'select(.r == "header") | .producer, .tools[]')" \
		"kineto2graph $v"$'\n'"kineto2graph $v"
}

@test "kineto2graph: --help and --version to /dev/full exit 1 with a write error" {
	to_full() { kineto2graph "$@" >/dev/full; }
	run -1 --separate-stderr to_full --help
	same "$stderr" "kineto2graph: stdout: write error: No space left on device"
	run -1 --separate-stderr to_full --version
	same "$stderr" "kineto2graph: stdout: write error: No space left on device"
}

@test "kineto2graph: an unknown option or a missing argument exits 2 with the usage on stderr" {
	small_trace
	run -2 --separate-stderr k2g --bogus in.json
	same "$output" ""
	same "${stderr_lines[0]}" "kineto2graph: unrecognized option '--bogus'"
	same "${stderr_lines[1]}" "$USAGE"
	same "${stderr_lines[2]}" "$TRY"
	same "${#stderr_lines[@]}" 3
	[ ! -s out.kg ]
	run -2 --separate-stderr k2g -x in.json
	same "${stderr_lines[0]}" "kineto2graph: invalid option -- 'x'"
	same "${stderr_lines[1]}" "$USAGE"
	run -2 --separate-stderr k2g in.json --iteration
	same "${stderr_lines[0]}" "kineto2graph: option '--iteration' requires an argument"
	same "${stderr_lines[1]}" "$USAGE"
	run -2 --separate-stderr k2g in.json -o
	same "${stderr_lines[0]}" "kineto2graph: option requires an argument -- 'o'"
}

@test "kineto2graph: a bad --iteration value exits 2 naming it" {
	small_trace
	local v
	for v in '' x -1 +1 ' 1' 1x 0x1 1.0 2147483648 all2 ALL; do
		run -2 --separate-stderr k2g --iteration "$v" in.json
		same "${stderr_lines[0]}" "kineto2graph: invalid iteration '$v' (a step number or 'all')"
		same "${stderr_lines[1]}" "$USAGE"
		[ ! -s out.kg ]
	done
}

@test "kineto2graph: a bad --rank value exits 2 naming it" {
	small_trace
	local v
	for v in '' x -1 1.5 2147483648; do
		run -2 --separate-stderr k2g --rank "$v" in.json
		same "${stderr_lines[0]}" "kineto2graph: invalid rank '$v'"
		same "${stderr_lines[1]}" "$USAGE"
	done
}

@test "kineto2graph: a bad --level value exits 2 naming it" {
	small_trace
	local v
	for v in '' x 0 20 -6 3x; do
		run -2 --separate-stderr k2g --level "$v" in.json
		same "${stderr_lines[0]}" "kineto2graph: invalid level '$v' (-5 to 19 but 0)"
		same "${stderr_lines[1]}" "$USAGE"
	done
}

@test "kineto2graph: a bad --jobs value exits 2 naming it" {
	small_trace
	local v
	for v in '' x 0 65 -1 2x; do
		run -2 --separate-stderr k2g -j "$v" in.json
		same "${stderr_lines[0]}" "kineto2graph: invalid --jobs '$v' (1 to 64)"
		same "${stderr_lines[1]}" "$USAGE"
	done
}

@test "kineto2graph: -j N writes the stream and the messages one process writes, byte for byte, and stops where it stops" {
	# tracegen's tiny preset, 4 ranks: the four sections from 1, 2, 3
	# and 4 workers are the same file, and -v's coverage lines come in
	# the files' order
	tracegen --preset tiny --tp 2 --pp 1 --dp 2 --iterations 1 --jobs 1 -d job
	local j
	kineto2graph -v -j 1 -o one.kg job/*.json.gz 2> one.err
	for j in 2 3 4; do
		kineto2graph -v -j "$j" -o "j$j.kg" job/*.json.gz 2> "j$j.err"
		cmp one.kg "j$j.kg"
		cmp one.err "j$j.err"
	done
	[ "$(grep -c coverage: one.err)" -eq 4 ]
	# a bad third file: the same message and exit, no output file, the
	# fourth file's coverage never told
	printf '{"traceEvents": [' > bad.json
	run -1 --separate-stderr kineto2graph -v -j 1 -o bad1.kg job/rank-0.json.gz job/rank-1.json.gz bad.json job/rank-2.json.gz
	local want=$stderr
	[[ $want == *"kineto2graph: bad.json: byte "*": truncated JSON (ends inside a value)" ]]
	for j in 2 3; do
		run -1 --separate-stderr kineto2graph -v -j "$j" -o "bad$j.kg" job/rank-0.json.gz job/rank-1.json.gz bad.json job/rank-2.json.gz
		same "$stderr" "$want"
		[ ! -e "bad$j.kg" ]
	done
	[ ! -e bad1.kg ]
	# standard input among the files: one process reads it, once
	run -0 --separate-stderr bash -c "zcat job/rank-1.json.gz | kineto2graph -q -j 2 job/rank-0.json.gz - | graphcat | grep -c '\"r\":\"end\"'"
	[ "$output" = 2 ]
}

@test "kineto2graph: --rank names one trace, so two files exit 2" {
	small_trace
	run -2 --separate-stderr k2g --rank 1 in.json in.json
	same "${stderr_lines[0]}" "kineto2graph: --rank names the rank of one trace, not of 2"
	same "${stderr_lines[1]}" "$USAGE"
}

@test "kineto2graph: the ends of the --level and --rank ranges are accepted" {
	small_trace
	kineto2graph -o default.kg in.json
	run -0 --separate-stderr kineto2graph --level -5 -o l-5.kg in.json
	run -0 --separate-stderr kineto2graph --level 1 -o l1.kg in.json
	run -0 --separate-stderr kineto2graph --level 19 -o l19.kg in.json
	same "$(graphcat l-5.kg)" "$(graphcat default.kg)"
	same "$(graphcat l1.kg)" "$(graphcat default.kg)"
	same "$(graphcat l19.kg)" "$(graphcat default.kg)"
	run -0 --separate-stderr kineto2graph --rank 2147483647 -o r.kg in.json
	same "$(graphcat r.kg | jq -r 'select(.r == "header") | .rank')" 2147483647
	run -0 --separate-stderr kineto2graph --rank 0 -o r.kg in.json
	same "$(graphcat r.kg | jq -r 'select(.r == "header") | .rank')" 0
}

@test "kineto2graph: --rank does not override the rank the trace records" {
	small_trace
	sed 's/^]}$/], "distributedInfo": {"rank": 3, "world_size": 8}}/' in.json >ranked.json
	run -0 --separate-stderr kineto2graph --rank 5 -o r.kg ranked.json
	same "$(graphcat r.kg | jq -c 'select(.r == "header") | [.rank, .world]')" "[3,8]"
}

@test "kineto2graph: --iteration N keeps step N's tasks, GPU work going with its launch" {
	small_trace
	local tasks='select(.r == "task") | "\(.n) \(.k) \(.it)"'
	run -0 --separate-stderr kineto2graph -o all.kg in.json
	same "$(graphcat -r all.kg | jq -r "$tasks" | sort)" \
		"$(printf '%s\n' 'aten::relu cpu 2' 'cudaLaunchKernel rt 1' 'gemm kern 1' 'orphan kern 2')"
	same "$(graphcat all.kg | jq -c 'select(.r == "header") | .iters')" "[1,2]"
	run -0 --separate-stderr kineto2graph --iteration 1 -o one.kg in.json
	same "$(graphcat -r one.kg | jq -r "$tasks" | sort)" \
		"$(printf '%s\n' 'cudaLaunchKernel rt 1' 'gemm kern 1')"
	same "$(graphcat one.kg | jq -c 'select(.r == "header") | .iters')" "[1]"
	run -0 --separate-stderr kineto2graph --iteration 2 -o two.kg in.json
	same "$(graphcat -r two.kg | jq -r "$tasks" | sort)" \
		"$(printf '%s\n' 'aten::relu cpu 2' 'orphan kern 2')"
	run -0 --separate-stderr kineto2graph --iteration all -o all2.kg in.json
	same "$(graphcat all2.kg)" "$(graphcat all.kg)"
}

@test "kineto2graph: an iteration the trace lacks exits 1 naming the steps it has" {
	small_trace
	run -1 --separate-stderr kineto2graph --iteration 0 -o out.kg in.json
	same "$stderr" "kineto2graph: in.json: no iteration 0 (the trace has 1, 2)"
	run -1 --separate-stderr kineto2graph --iteration 2147483647 -o out.kg in.json
	same "$stderr" "kineto2graph: in.json: no iteration 2147483647 (the trace has 1, 2)"
	{
		printf '{"traceEvents": [\n'
		for i in 1 2 3 4 5 6 7 8 9; do
			printf '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": 1, "tid": 1, "ts": %d, "dur": 10},\n' "$i" "$((i * 10))"
		done
		printf '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 12, "dur": 1}]}\n'
	} >nine.json
	run -1 --separate-stderr kineto2graph --iteration 10 -o out.kg nine.json
	same "$stderr" "kineto2graph: nine.json: no iteration 10 (the trace has 1 to 9)"
	grep -v ProfilerStep in.json >nosteps.json
	run -1 --separate-stderr kineto2graph --iteration 1 -o out.kg nosteps.json
	same "$stderr" "kineto2graph: nosteps.json: no ProfilerStep in the trace, so no iteration 1"
	[ ! -e out.kg ]
}

@test "kineto2graph: GPU tasks without their launch give one warning, which -q silences" {
	small_trace
	run -0 --separate-stderr kineto2graph -o out.kg in.json
	same "$stderr" "kineto2graph: warning: in.json: 1 GPU tasks have no launch in the trace"
	run -0 --separate-stderr kineto2graph -q -o out.kg in.json
	same "$stderr" ""
	run -0 --separate-stderr kineto2graph --quiet -o out.kg in.json
	same "$stderr" ""
}

@test "kineto2graph: a missing file exits 1 naming it, and stdout does not read as a stream" {
	run -1 --separate-stderr k2g nosuch.json
	same "$output" ""
	same "$stderr" "kineto2graph: nosuch.json: No such file or directory"
	run -1 --separate-stderr graphcat out.kg
}

@test "kineto2graph: a directory operand exits 1 with a read error" {
	mkdir dir
	run -1 --separate-stderr kineto2graph -o out.kg dir
	same "$stderr" "kineto2graph: dir: read error: Is a directory"
}

@test "kineto2graph: empty input exits 1 as not a Kineto trace" {
	run -1 --separate-stderr k2g </dev/null
	same "$stderr" "kineto2graph: -: empty input, not a Kineto trace"
	: >empty.json
	run -1 --separate-stderr k2g empty.json
	same "$stderr" "kineto2graph: empty.json: empty input, not a Kineto trace"
	gzip -n <empty.json >empty.json.gz
	run -1 --separate-stderr k2g empty.json.gz
	same "$stderr" "kineto2graph: empty.json.gz: empty input, not a Kineto trace"
}

@test "kineto2graph: JSON cut inside an event is truncated at the byte where it ends" {
	local t
	t=$(ev '"pid":1,"tid":1,"ts":10,"dur":5')
	t=${t%'}]}'}
	bad_json "$t" "byte ${#t}: truncated JSON (ends inside an event)"
	t=${t%5}
	bad_json "$t" "byte ${#t}: truncated JSON (ends inside an event)"
	t=${t%'"dur":'}
	bad_json "$t" "byte ${#t}: truncated JSON (ends inside an event)"
}

@test "kineto2graph: JSON cut between events or values is truncated at the byte where it ends" {
	local t
	t=$(ev '"pid":1,"tid":1,"ts":10,"dur":5')
	t=${t%']}'},
	bad_json "$t" "byte ${#t}: truncated JSON (ends inside a value)"
	t='{"traceEvents":['
	bad_json "$t" "byte 16: truncated JSON (ends inside a value)"
	t='{"traceEv'
	bad_json "$t" "byte 9: truncated JSON (ends inside a value)"
}

@test "kineto2graph: one byte of input is read, not lost" {
	bad_json '{' "byte 1: truncated JSON (ends inside a value)"
	bad_json 'x' "byte 1: invalid JSON (lexical error: invalid char in json text.)"
	printf '\037' >in.json
	run -1 --separate-stderr kineto2graph -o out.kg in.json
	same "$stderr" "kineto2graph: in.json: byte 1: invalid JSON (lexical error: invalid char in json text.)"
}

@test "kineto2graph: garbage is invalid JSON at the byte after the first bad character" {
	bad_json 'hello' "byte 1: invalid JSON (lexical error: invalid char in json text.)"
	printf '\211PNG\r\n\032\n' >in.json
	run -1 --separate-stderr kineto2graph -o out.kg in.json
	same "$stderr" "kineto2graph: in.json: byte 1: invalid JSON (lexical error: invalid char in json text.)"
	local t='{"traceEvents":[]} x'
	bad_json "$t" "byte $(after "$t" ' x'): invalid JSON (parse error: trailing garbage)"
	t='{"traceEvents":[]}{}'
	bad_json "$t" "byte $(after "$t" ']}{'): invalid JSON (parse error: trailing garbage)"
}

@test "kineto2graph: a field of the wrong type exits 1 naming it at the byte after its value" {
	local t
	# a number in a string is one (ROCm's traces write them so); a
	# string that holds none is not
	t=$(ev '"pid":1,"tid":1,"ts":"12us","dur":5')
	bad_json "$t" "byte $(after "$t" '"ts":"12us"'): field ts: expected a number"
	t=$(ev '"pid":1,"tid":1,"ts":12,"dur":true')
	bad_json "$t" "byte $(after "$t" '"dur":true'): field dur: expected a number"
	t=$(ev '"pid":1,"tid":1,"ts":12,"dur":null')
	bad_json "$t" "byte $(after "$t" '"dur":null'): field dur: expected a number"
	t=$(ev '"pid":true,"tid":1,"ts":1,"dur":1')
	bad_json "$t" "byte $(after "$t" '"pid":true'): field pid: expected a number or a string"
	t=$(ev '"pid":1.5,"tid":1,"ts":1,"dur":1')
	bad_json "$t" "byte $(after "$t" '"pid":1.5'): field pid: expected an integer"
	t='{"traceEvents":[{"ph":"X","cat":"cpu_op","name":5,"pid":1,"tid":1,"ts":1,"dur":1}]}'
	bad_json "$t" "byte $(after "$t" '"name":5'): field name: expected a string"
	t='{"traceEvents":[{"ph":"X","cat":7,"name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}'
	bad_json "$t" "byte $(after "$t" '"cat":7'): field cat: expected a string"
	t=$(ev '"pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":"7a"}')
	bad_json "$t" "byte $(after "$t" '"correlation":"7a"'): field args.correlation: expected an integer"
	t=$(ev '"pid":1,"tid":1,"ts":1,"dur":1,"args":{"correlation":1.5}')
	bad_json "$t" "byte $(after "$t" '"correlation":1.5'): field args.correlation: expected an integer"
	t=$(ev '"pid":1,"tid":1,"ts":1,"dur":1,"args":[]')
	bad_json "$t" "byte $(after "$t" '"args":['): field args: expected an object"
	t='{"traceEvents":[],"baseTimeNanoseconds":"5 ns"}'
	bad_json "$t" "byte $(after "$t" '"5 ns"'): field baseTimeNanoseconds: expected an integer"
	t='{"traceEvents":[],"distributedInfo":{"rank":"zero"}}'
	bad_json "$t" "byte $(after "$t" '"rank":"zero"'): field distributedInfo.rank: expected an integer"
}

@test "kineto2graph: an object or array given for a scalar field names the type the field takes" {
	local t
	t=$(ev '"pid":1,"tid":1,"ts":{},"dur":1')
	bad_json "$t" "byte $(after "$t" '"ts":{'): field ts: expected a number"
	t='{"traceEvents":[{"ph":"X","cat":"cpu_op","name":[],"pid":1,"tid":1,"ts":1,"dur":1}]}'
	bad_json "$t" "byte $(after "$t" '"name":['): field name: expected a string"
	t=$(ev '"pid":[1],"tid":1,"ts":1,"dur":1')
	bad_json "$t" "byte $(after "$t" '"pid":['): field pid: expected a number or a string"
}

@test "kineto2graph: a traceEvents that is not an array is refused" {
	local t='{"traceEvents":{}}'
	bad_json "$t" "byte $(after "$t" '"traceEvents":{'): field traceEvents: expected an array"
	bad_json '{"traceEvents":5}' "not a Kineto trace (no traceEvents array)"
	bad_json '{"traceEvents":null}' "not a Kineto trace (no traceEvents array)"
	bad_json '{"traceEvents":"x"}' "not a Kineto trace (no traceEvents array)"
	bad_json '{"displayTimeUnit":"ms"}' "not a Kineto trace (no traceEvents array)"
	t='{"traceEvents":[[]]}'
	bad_json "$t" "byte $(after "$t" '[['): traceEvents: an event is not an object"
}

@test "kineto2graph: a top-level value that is no object or array is not a Kineto trace" {
	bad_json '42' "not a Kineto trace (not a JSON object)"
	bad_json '"traceEvents"' "not a Kineto trace (not a JSON object)"
	bad_json 'null' "not a Kineto trace (not a JSON object)"
}

@test "kineto2graph: a trace without events exits 1" {
	bad_json '{"traceEvents":[]}' "no trace events (not a Kineto trace?)"
	bad_json '[]' "no trace events (not a Kineto trace?)"
}

# json.c: "Known fields with the wrong type are errors", as an array for
# an event or for args already is.
@test "kineto2graph: a scalar where an event or its args belong is refused" {
	local t
	t='{"traceEvents":[5,{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]}'
	bad_json "$t" "byte $(after "$t" '[5'): traceEvents: an event is not an object"
	t=$(ev '"pid":1,"tid":1,"ts":1,"dur":1,"args":5')
	bad_json "$t" "byte $(after "$t" '"args":5'): field args: expected an object"
}

@test "kineto2graph: a negative duration exits 1 at the byte after it" {
	local t
	t=$(ev '"pid":1,"tid":1,"ts":1,"dur":-1')
	bad_json "$t" "byte $(after "$t" '"dur":-1'): field dur: negative duration"
}

# Times are kept within half the int64 range (so that no sum or difference
# of two overflows): up to 4611686018427387903 ns, 4611686018427387.903 us.
@test "kineto2graph: a time beyond half the int64 nanoseconds is out of range" {
	local t ts
	printf '%s' "$(ev '"pid":1,"tid":1,"ts":4611686018427387.903,"dur":0')" >max.json
	run -0 --separate-stderr kineto2graph -o max.kg max.json
	graphcat max.kg | grep -q '"tbase":4611686018427387903,'
	for ts in 4611686018427387.904 4611686018427388 9223372036854775.807 \
		10000000000000000 -4611686018427387.904 1e16 1e400; do
		t=$(ev "\"pid\":1,\"tid\":1,\"ts\":$ts,\"dur\":0")
		bad_json "$t" "byte $(after "$t" "\"ts\":$ts"): field ts: number out of range"
	done
}

@test "kineto2graph: a string of 1 MiB is kept whole and one byte more is refused" {
	python3 -c '
pre = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\""
post = "\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}"
open("max.json", "w").write(pre + "a" * 1048576 + post)
open("over.json", "w").write(pre + "a" * 1048577 + post)
print(len(pre) + 1048577 + 1)' >offset
	run -0 --separate-stderr kineto2graph -o max.kg max.json
	same "$(graphcat -r max.kg | jq 'select(.r == "task") | .n | length')" 1048576
	run -1 --separate-stderr kineto2graph -o out.kg over.json
	same "$stderr" "kineto2graph: over.json: byte $(cat offset): string longer than 1048576 bytes"
}

# A string known to be over 2 MiB is refused there, without reading on
# (json.c: YAJL lexes a string spanning chunks again at every chunk); one
# between 1 and 2 MiB at the byte after it.
@test "kineto2graph: a 10 MB string exits 1 at its 2097153rd byte, a key over 1 MiB at the byte after it" {
	python3 -c '
pre = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\""
open("big.json", "w").write(pre + "a" * 10000000 + "\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}")
print(len(pre) + 2097153)
pre = "{\"traceEvents\":[{\"ph\":\"X\",\""
open("key.json", "w").write(pre + "k" * 1048577 + "\":1}]}")
print(len(pre) + 1048577 + 1)' >offsets
	run -1 --separate-stderr kineto2graph -o out.kg big.json
	same "$stderr" "kineto2graph: big.json: byte $(sed -n 1p offsets): string longer than 1048576 bytes"
	run -1 --separate-stderr kineto2graph -o out.kg key.json
	same "$stderr" "kineto2graph: key.json: byte $(sed -n 2p offsets): string longer than 1048576 bytes"
	# the strings are scanned on the reading thread, or here without one
	KG_READER_THREAD=0 run -1 --separate-stderr kineto2graph -o out.kg big.json
	same "$stderr" "kineto2graph: big.json: byte $(sed -n 1p offsets): string longer than 1048576 bytes"
	gzip -1 -c big.json > big.json.gz
	run -1 --separate-stderr kineto2graph -o out.kg big.json.gz
	same "$stderr" "kineto2graph: big.json.gz: byte $(sed -n 1p offsets): string longer than 1048576 bytes"
}

# The scan goes eight bytes at a time where no backslash is (json.c,
# scan_strings): the place it refuses at is the same for every
# alignment of the string and of its escapes, counted as the rule says
# (an escape one byte; its next byte, or \u's five, none).
@test "kineto2graph: a long string with escapes is refused at the same byte at every alignment" {
	python3 -c '
import sys
for pad in range(8):
    pre = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"args\":{\"k\":\"x\\\"y\\\\z\\u0041" + "p" * pad + "\"},\"name\":\""
    s = ("abcdefg\\\"h\\\\ij\\u00e9" + "q" * pad) * 200000
    n, skip, at = 0, 0, None
    for j, c in enumerate(s):
        if skip:
            skip = (4 if c == "u" else 0) if skip == -1 else skip - 1
            continue
        if c == "\\":
            skip = -1
        n += 1
        if n > 2 * 1048576:
            at = len(pre) + j + 1
            break
    open("a%d.json" % pad, "w").write(pre + s + "\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}")
    print(at)' >offsets
	for pad in 0 1 2 3 4 5 6 7; do
		run -1 --separate-stderr kineto2graph -o out.kg a$pad.json
		same "$stderr" "kineto2graph: a$pad.json: byte $(sed -n "$((pad + 1))p" offsets): string longer than 1048576 bytes"
	done
	[ ! -e out.kg ]
}

# Depth counts every open object and array: the top object (1), traceEvents
# (2), an event (3), its args (4), then the arrays in args.
@test "kineto2graph: 64 levels of nesting are read and a 65th is refused" {
	local open close t
	open=$(printf '%*s' 60 '' | tr ' ' '[')
	close=$(printf '%*s' 60 '' | tr ' ' ']')
	printf '%s' "$(ev "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"args\":{\"x\":$open$close}")" >deep.json
	run -0 --separate-stderr kineto2graph -o deep.kg deep.json
	t=$(ev "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1,\"args\":{\"x\":[$open$close]}")
	bad_json "$t" "byte $(after "$t" "[$open"): nesting deeper than 64 levels"
}

@test "kineto2graph: 100000 open brackets exit 1 at the 65th level" {
	printf '{"a":' >in.json
	head -c 100000 /dev/zero | tr '\0' '[' >>in.json
	run -1 --separate-stderr kineto2graph -o out.kg in.json
	same "$stderr" "kineto2graph: in.json: byte $((5 + 64)): nesting deeper than 64 levels"
}

# The offset of a gzip error counts JSON bytes: what zlib could inflate.
@test "kineto2graph: a truncated .gz exits 1 at the JSON byte where its data stops" {
	small_trace
	python3 -c '
import gzip, zlib
gz = gzip.compress(open("in.json", "rb").read(), mtime=0)
open("half.json.gz", "wb").write(gz[:len(gz) // 2])
print(len(zlib.decompressobj(31).decompress(gz[:len(gz) // 2])))
open("head.json.gz", "wb").write(gz[:5])' >offset
	run -1 --separate-stderr kineto2graph -o out.kg half.json.gz
	same "$stderr" "kineto2graph: half.json.gz: byte $(cat offset): truncated gzip data"
	[ ! -e out.kg ]
	run -1 --separate-stderr kineto2graph -o out.kg head.json.gz
	same "$stderr" "kineto2graph: head.json.gz: byte 0: truncated gzip data"
}

@test "kineto2graph, graph-scale-pp, graphstat: sorting on two threads or one, the same output" {
	# Large sorts split in two, a half on a thread (common/psort.h), or
	# a job's tasks sorted rank by rank, ranks shared by two threads:
	# KG_SORT_THREAD=always splits every sort, =0 none; a stable merge
	# of stable halves gives qsort's order, ties and all.
	need_traces
	local f="$TRACES/hta_16rank_a100_rank0/rank0.json.gz"
	[ -f "$f" ] || skip "no $f"
	KG_SORT_THREAD=always kineto2graph -q -o a.kg "$f"
	KG_SORT_THREAD=0 kineto2graph -q -o b.kg "$f"
	cmp a.kg b.kg
	tracegen --preset tiny -d tr
	kineto2graph -q tr/*.json.gz | graph-deps --merge > job.kg
	KG_SORT_THREAD=always graph-scale-pp -q 4 job.kg > a.kg
	KG_SORT_THREAD=0 graph-scale-pp -q 4 job.kg > b.kg
	cmp a.kg b.kg
	graphsim -o sim.kg job.kg
	KG_SORT_THREAD=always graphstat --csv sim.kg > a.csv
	KG_SORT_THREAD=0 graphstat --csv sim.kg > b.csv
	cmp a.csv b.csv
	# rows of more than one rank: the sort went rank by rank
	[ "$(awk -F, 'NR > 1 && $1 != "job" { print $1 }' a.csv | sort -u | wc -l)" -gt 1 ]
}

# The inputs of the two-halves tests, from the shared 16-rank trace, in
# the test's directory: t.json, the trace; late.json, its top-level
# fields after the events (the second half reads them); instr.json, an
# event whose name holds the middle of the file, and "}, {" in it;
# long.json, a string too long near the end; ctl.json, a control byte
# at three quarters; cut.json, the first three quarters.
split_inputs() {
	zcat "$1" > t.json
	python3 -c '
import json
t = json.load(open("t.json"))
ev = t.pop("traceEvents")
late = {"traceEvents": ev}
late.update(t)
json.dump(late, open("late.json", "w"))
small = ev[:20]
mid = dict(ev[20]); mid["name"] = "x}, {" * 150000
json.dump({"traceEvents": small + [mid] + ev[21:40]}, open("instr.json", "w"))
t2 = {"traceEvents": ev + [dict(ev[-1], name="y" * 3000000)]}
json.dump(t2, open("long.json", "w"))
'
	size=$(stat -c %s t.json)
	{ head -c $((size * 3 / 4)) t.json; printf '\001'; tail -c +$((size * 3 / 4 + 1)) t.json; } > ctl.json
	head -c $((size * 3 / 4)) t.json > cut.json
}

# Each file gives the same graph split always and never.
split_same() {
	local x
	for x in "$@"; do
		KG_SPLIT_PARSE=0 kineto2graph -q -o a.kg "$x"
		KG_SPLIT_PARSE=always kineto2graph -q -o b.kg "$x"
		cmp a.kg b.kg
	done
}

# Each file fails with the same message split always and never, and
# leaves no output.
split_same_error() {
	local x err1
	for x in "$@"; do
		KG_SPLIT_PARSE=0 run -1 --separate-stderr kineto2graph -q -o out.kg "$x"
		err1=$stderr
		KG_SPLIT_PARSE=always run -1 --separate-stderr kineto2graph -q -o out.kg "$x"
		[ "$stderr" = "$err1" ] || { echo "$x: '$stderr' against '$err1'"; return 1; }
		[[ "$stderr" == "kineto2graph: $x: "* ]] || return 1
		[ ! -e out.kg ] || return 1
	done
}

@test "kineto2graph: a gzip trace parsed in two halves at once or in one, the same graph and hash; broken, the same message" {
	# A gzip file of 16 MiB of JSON or more (as its trailer says) is
	# parsed in two halves at once (split.c,
	# split_start_gz): a thread reads the file on its own, passes over
	# the first half, finds a place between two events past the middle
	# and parses from there; the caller parses up to it. Where the place
	# is not between two events of traceEvents, or the second half is
	# broken or needs the first's events, the caller parses on. The
	# graph's header holds the file's hash, which the thread makes when
	# it takes the second half. KG_SPLIT_PARSE as for a plain file.
	need_traces
	local f="$TRACES/hta_16rank_a100_rank0/rank0.json.gz"
	[ -f "$f" ] || skip "no $f"
	split_inputs "$f"
	size=$(stat -c %s t.json)
	for x in t late instr ctl long; do gzip -c $x.json > $x.json.gz; done
	gzip -c "$FIX/rules/tags_modh.json" > modh.json.gz
	# two gzip members: the trailer gives the second's size alone
	{ head -c $((size / 2)) t.json | gzip -c; tail -c +$((size / 2 + 1)) t.json | gzip -c; } > two.json.gz
	# the compressed file cut, and a byte of it changed, past the middle
	gz=$(stat -c %s t.json.gz)
	head -c $((gz * 3 / 4)) t.json.gz > cut.json.gz
	python3 -c '
import sys
b = bytearray(open("t.json.gz", "rb").read())
b[len(b) * 3 // 4] ^= 0x10
open("flip.json.gz", "wb").write(b)
'
	split_same t.json.gz late.json.gz instr.json.gz modh.json.gz two.json.gz
	# split by default too (over 16 MiB of JSON): the same graph, the
	# header's hash of the file included
	[ "$(stat -c %s t.json)" -ge $((16 << 20)) ]
	kineto2graph -q -o t.kg t.json.gz
	KG_SPLIT_PARSE=0 kineto2graph -q -o a.kg t.json.gz
	cmp a.kg t.kg
	split_same_error ctl.json.gz long.json.gz cut.json.gz flip.json.gz
}

@test "kineto2graph: a plain trace parsed in two halves at once or in one, the same graph; broken, the same message" {
	# A plain file of 16 MiB or more is parsed in two halves at once
	# (kineto2graph/json.c, split_start): the second from an event near
	# the middle, on a thread, taken into the first's after. Where the
	# middle is not between two events of traceEvents, or the second half
	# is broken or needs the first's events, the whole is parsed in one.
	# KG_SPLIT_PARSE=always splits any size, =0 none: the graphs and the
	# messages must be the same.
	need_traces
	local f="$TRACES/hta_16rank_a100_rank0/rank0.json.gz"
	[ -f "$f" ] || skip "no $f"
	split_inputs "$f"
	split_same t.json late.json instr.json "$FIX/rules/tags_modh.json" "$FIX/rules/tags_module.json"
	# the fields after the events were read (late.json is split by default)
	kineto2graph -q -o late.kg late.json
	graphcat late.kg | head -1 |
	    jq -e '.gpu == "NVIDIA A100-SXM4-80GB" and .rank == 0 and .world == 16' > /dev/null
	split_same_error ctl.json cut.json long.json
}

@test "kineto2graph: reading ahead on a thread or not, a trace converts the same, whole or broken" {
	# A regular file is read and gunzipped on a thread of its own, a few
	# chunks of 256 KiB ahead of the parser (kineto2graph/ahead.h);
	# KG_READER_THREAD=0 reads it on the parser's. Both must give the same
	# graph, and the same message at the same byte.
	need_traces
	local f="$TRACES/hta_16rank_a100_rank0/rank0.json.gz"
	[ -f "$f" ] || skip "no $f"
	kineto2graph -q -o a.kg "$f"
	KG_READER_THREAD=0 kineto2graph -q -o b.kg "$f"
	cmp a.kg b.kg
	zcat "$f" > t.json
	[ "$(stat -c %s t.json)" -gt 4000000 ]
	kineto2graph -q -o c.kg t.json
	KG_READER_THREAD=0 kineto2graph -q -o d.kg t.json
	cmp c.kg d.kg
	size=$(stat -c %s "$f")
	head -c $((size / 2)) "$f" > half.json.gz
	cp "$f" flip.json.gz
	chmod u+w flip.json.gz
	printf '\x55\x55\x55\x55' | dd of=flip.json.gz bs=1 seek=$((size / 3)) conv=notrunc status=none
	{ head -c 3000000 t.json; printf ' }}}'; tail -c +3000001 t.json; } > bad.json
	for x in half.json.gz flip.json.gz bad.json; do
		run -1 --separate-stderr kineto2graph -q -o out.kg "$x"
		err1=$stderr
		KG_READER_THREAD=0 run -1 --separate-stderr kineto2graph -q -o out.kg "$x"
		[ "$stderr" = "$err1" ] || { echo "$x: '$stderr' against '$err1'"; false; }
		[[ "$stderr" == "kineto2graph: $x: byte "* || "$stderr" == "kineto2graph: $x: corrupt gzip"* ]]
		[ ! -e out.kg ]
	done
}

@test "kineto2graph: a .gz without its trailer is truncated after the whole JSON" {
	small_trace
	gzip -n <in.json | head -c -4 >cut.json.gz
	run -1 --separate-stderr kineto2graph -o out.kg cut.json.gz
	same "$stderr" "kineto2graph: cut.json.gz: byte $(wc -c <in.json): truncated gzip data"
}

@test "kineto2graph: a .gz whose checksum fails is corrupt" {
	small_trace
	python3 -c '
import gzip
gz = bytearray(gzip.compress(open("in.json", "rb").read(), mtime=0))
gz[-8] ^= 0xff
open("crc.json.gz", "wb").write(gz)'
	run -1 --separate-stderr kineto2graph -o out.kg crc.json.gz
	same "$stderr" "kineto2graph: crc.json.gz: corrupt gzip data (incorrect data check)"
	[ ! -e out.kg ]
}

@test "kineto2graph: a .gz of two members reads as their concatenation" {
	small_trace
	head -c 100 in.json | gzip -n >two.json.gz
	tail -c +101 in.json | gzip -n >>two.json.gz
	kineto2graph -o plain.kg in.json
	run -0 --separate-stderr kineto2graph -o two.kg two.json.gz
	same "$(graphcat two.kg | jq -c 'del(.source, .xxh3)')" \
		"$(graphcat plain.kg | jq -c 'del(.source, .xxh3)')"
}

@test "kineto2graph: writing to /dev/full exits 1 with one write-error line" {
	to_full() { kineto2graph "$@" >/dev/full; }
	small_trace
	run -1 --separate-stderr to_full -q in.json
	same "${#stderr_lines[@]}" 1
	[[ $stderr == 'kineto2graph: '*'No space left on device' ]]
	many_trace 30000
	run -1 --separate-stderr to_full many.json
	same "${#stderr_lines[@]}" 1
	[[ $stderr == 'kineto2graph: '*'No space left on device' ]]
}

@test "kineto2graph: a reader that stops early ends it by SIGPIPE, with nothing on stderr" {
	many_trace 30000
	kineto2graph -o many.kg many.json
	[ "$(wc -c <many.kg)" -gt 300000 ] # well past a pipe's buffer
	run -0 bash -c 'kineto2graph many.json 2>err | head -c 10 >/dev/null; echo "${PIPESTATUS[0]}"'
	same "$output" 141
	same "$(cat err)" ""
}

@test "kineto2graph: refuses to write the binary stream to a terminal" {
	command -v script >/dev/null || skip "no script(1) to make a terminal"
	small_trace
	on_tty() { script -qec "$*" /dev/null </dev/null >tty.out; }
	run -1 on_tty kineto2graph in.json
	same "$(tr -d '\r' <tty.out)" \
		"kineto2graph: refusing to write a binary graph stream to a terminal (use -o FILE or a pipe)"
	run -0 on_tty kineto2graph -q -o in.kg in.json
	same "$(cat tty.out)" ""
	graphcat in.kg >/dev/null
}

@test "kineto2graph: standard input gives the same graph as the file operand" {
	small_trace
	kineto2graph -o file.kg in.json
	run -0 --separate-stderr k2g <in.json
	same "$(dump_nosrc out.kg)" "$(dump_nosrc file.kg)"
	same "$(graphcat out.kg | jq -r 'select(.r == "header") | .source')" -
	run -0 --separate-stderr k2g - <in.json
	same "$(dump_nosrc out.kg)" "$(dump_nosrc file.kg)"
	gzip -n <in.json >in.json.gz
	kineto2graph -o filegz.kg in.json.gz
	run -0 --separate-stderr k2g - <in.json.gz
	same "$(dump_nosrc out.kg)" "$(dump_nosrc filegz.kg)"
}

@test "kineto2graph: -o FILE writes the stream stdout would get" {
	small_trace
	run -0 --separate-stderr k2g -q in.json
	run -0 --separate-stderr kineto2graph -q -o file.kg in.json
	same "$output" ""
	same "$stderr" ""
	same "$(graphcat file.kg)" "$(graphcat out.kg)"
	run -0 --separate-stderr kineto2graph -q --output file2.kg in.json
	same "$(graphcat file2.kg)" "$(graphcat out.kg)"
}

@test "kineto2graph: a failing run with -o leaves no file behind" {
	small_trace
	run -1 --separate-stderr kineto2graph -o out.kg nosuch.json
	run -1 --separate-stderr kineto2graph -q -o out.kg in.json nosuch.json
	same "$stderr" "kineto2graph: nosuch.json: No such file or directory"
	same "$(find . -name 'out.kg*')" ""
	echo old >out.kg
	run -1 --separate-stderr kineto2graph -q -o out.kg in.json nosuch.json
	same "$(cat out.kg)" old
	same "$(find . -name 'out.kg*')" ./out.kg
}

# The FIFO is held open read-write here, so the writer never waits for a
# reader, and the small stream fits its buffer.
@test "kineto2graph: -o onto a FIFO writes into it" {
	small_trace
	kineto2graph -q -o want.kg in.json
	mkfifo fifo
	exec 4<>fifo
	run -0 --separate-stderr kineto2graph -q -o fifo in.json
	if [ ! -p fifo ]; then
		exec 4>&-
		echo "fifo replaced by a $(stat -c %F fifo)"
		return 1
	fi
	timeout 5 head -c "$(wc -c <want.kg)" <&4 >got.kg
	exec 4>&-
	same "$(graphcat got.kg)" "$(graphcat want.kg)"
}

@test "kineto2graph: two input files give two sections, in order" {
	small_trace a.json
	sed 's/aten::relu/aten::gelu/' a.json >b.json
	run -0 --separate-stderr kineto2graph -o ab.kg a.json b.json
	same "$(graphcat ab.kg | jq -r 'select(.r == "header" or .r == "end") | .r + " " + (.source // "")')" \
		"$(printf '%s\n' 'header a.json' 'end ' 'header b.json' 'end ')"
	same "$(graphcat -r ab.kg | jq -r 'select(.r == "task" and .k == "cpu") | .n')" \
		"$(printf '%s\n' aten::relu aten::gelu)"
	kineto2graph -o a.kg a.json
	kineto2graph -o b.kg b.json
	# the same sections as the two streams one after the other, but for
	# their place in the run (1.4): sections 0 and 1 of 2, against 0 of 1
	# twice
	same "$(graphcat ab.kg | jq -c 'del(.section, .sections)')" \
		"$(cat a.kg b.kg | graphcat | jq -c 'del(.section, .sections)')"
	same "$(graphcat ab.kg | jq -r 'select(.r == "header") | "\(.section) \(.sections)"')" \
		"$(printf '%s\n' '0 2' '1 2')"
	same "$(cat a.kg b.kg | graphcat | jq -r 'select(.r == "header") | "\(.section) \(.sections)"')" \
		"$(printf '%s\n' '0 1' '0 1')"
}

@test "kineto2graph: a failure after a first section leaves a stream no reader takes as whole" {
	small_trace
	run -1 --separate-stderr k2g -q in.json nosuch.json
	same "$stderr" "kineto2graph: nosuch.json: No such file or directory"
	run -1 --separate-stderr graphcat out.kg
	# the header kineto2graph put where it stopped says who failed
	[[ $stderr == 'graphcat: out.kg: incomplete graph stream: it ends where kineto2graph failed (record '*')' ]]
}

@test "kineto2graph: the header names the GPU the rank's kernels ran on, from deviceProperties, or the one kind listed" {
	need_traces
	# worker 3 of the DLRM job: its kernels on device 3 of the 8 listed
	f=$(echo "$TRACES"/param_dlrm_8rank_v100/kineto/worker3_*.json.gz)
	want=$(zcat "$f" | jq -r --argjson d "$(zcat "$f" | jq '[.traceEvents[] | select(.cat == "kernel") | .args.device] | unique | .[0]')" \
		'.deviceProperties[] | select(.id == $d) | [.name, .totalGlobalMem, .numSms] | @tsv')
	[ -n "$want" ]
	[ "$(kineto2graph -q "$f" | graphcat | head -1 | jq -r '[.gpu, .gpu_mem, .gpu_sms] | @tsv')" = "$want" ]
	# the fixture lists one device with a name and SMs, no memory
	[ "$(kineto2graph -q "$FIX/opmodel/mm.json" | graphcat | head -1 | jq -c '[.gpu, .gpu_mem, .gpu_sms]')" = '["Test GPU",null,100]' ]
	# a trace without deviceProperties says nothing
	f=$(echo "$TRACES"/hta_sampled_128rank_2ranks/sampled_rank-0.json.gz)
	if zcat "$f" | grep -q deviceProperties; then return 1; fi
	[ "$(kineto2graph -q "$f" | graphcat | head -1 | jq -c '[.gpu, .gpu_mem, .gpu_sms]')" = '[null,null,null]' ]
	# the vLLM MI300X trace lists device 0 and its kernels ran on device 2:
	# one kind of GPU listed, that one
	f=$TRACES/amd_rocm/tracelens_mi300x_qwen1.5_0.5b_inference.json.gz
	[ "$(zcat "$f" | jq -c '[.deviceProperties[].id]')" = '[0]' ]
	[ "$(zcat "$f" | jq -c '[.traceEvents[] | select(.cat == "kernel") | .args.device] | unique')" = '[2]' ]
	want=$(zcat "$f" | jq -r '.deviceProperties[0] | [.name, .totalGlobalMem, .numSms] | @tsv')
	[ "$(kineto2graph -q "$f" | graphcat | head -1 | jq -r '[.gpu, .gpu_mem, .gpu_sms] | @tsv')" = "$want" ]
	# two kinds listed and the kernels on neither: none named
	printf '{"deviceProperties": [{"id": 0, "name": "A", "numSms": 1}, {"id": 1, "name": "B", "numSms": 1}], "traceEvents": [
	{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
	{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 1}},
	{"ph": "X", "cat": "kernel", "name": "k", "pid": 5, "tid": 7, "ts": 20, "dur": 5, "args": {"device": 5, "stream": 7, "correlation": 1}}]}' > two.json
	[ "$(kineto2graph -q two.json | graphcat | head -1 | jq -c '[.gpu, .gpu_sms]')" = '[null,null]' ]
	sed -i 's/"name": "B"/"name": "A"/' two.json
	[ "$(kineto2graph -q two.json | graphcat | head -1 | jq -c '[.gpu, .gpu_sms]')" = '["A",1]' ]
}

@test "kineto2graph: a task keeps its op's Input type beside its Input Dims" {
	need_gpu
	kineto2graph -q "$GPU/gpt_L4_H1024.json.gz" > g.kg
	# the first aten::addmm of the trace, as the profiler wrote it
	want=$(zcat "$GPU/gpt_L4_H1024.json.gz" | jq -c 'first(.traceEvents[] | select(.name == "aten::addmm" and .args["Input type"] != null)) | [.args["Input Dims"], .args["Input type"]]')
	# (the first Linear of the first block, in the first step as in the graph)
	[ "$(dump g.kg | jq -c 'select(.r == "task" and .k == "kern" and .op == "aten::addmm") | [(.sh | fromjson), (.ty | fromjson)]' | head -1)" = "$want" ]
	# a leaf CPU op carries its own
	want=$(zcat "$GPU/gpt_L4_H1024.json.gz" | jq -c 'first(.traceEvents[] | select(.name == "aten::empty_strided" and .args["Input type"] != null)) | .args["Input type"]')
	[ "$(dump g.kg | jq -c 'select(.r == "task" and .k == "cpu" and .n == "aten::empty_strided") | .ty | fromjson' | head -1)" = "$want" ]
}

@test "kineto2graph: 200,000 ProfilerStep annotations, each twice, are found in n log n time" {
	# each step once on the main thread and once as a GPU-side copy
	# later in the trace (ignored: the first of a number counts): the
	# finder once scanned the steps found for each (n^2 / 2: 12 s here)
	if grep -q fsanitize "$ROOT/build/flags" 2>/dev/null; then
		skip "timing under a sanitizer build"
	fi
	python3 - <<-'PY'
	n = 200000
	ev = ['{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,'
	      '"ts":%d,"dur":10}' % (i, 10 * i) for i in range(n)]
	ev += ['{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#%d","pid":0,"tid":7,'
	       '"ts":%d,"dur":20}' % (i, 10 * i + 3) for i in range(n)]
	ev.append('{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":15,"dur":2}')
	open("steps.json", "w").write('{"traceEvents":[' + ",\n".join(ev) + "]}")
	PY
	run -0 --separate-stderr timeout 5 kineto2graph -q -o s.kg steps.json
	# every iteration, and the op in iteration 1 (10 to 20 us)
	[ "$(graphcat s.kg | head -1 | jq '.iters | length')" -eq 200000 ]
	[ "$(graphcat s.kg | jq -c 'select(.r == "task") | .it')" = 1 ]
}
