#!/usr/bin/env bats
# graph-scale-layers: the checklist; a hand-written rank grown and shrunk
# with times worked out by hand; the identity and both directions on
# tracegen's pipeline job against its own generated counts; the
# gradients' new bytes; what stops it.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

USAGE='usage: graph-scale-layers [-q] [-o FILE] [--gpus-per-node N] [--max-memory BYTES] N [FILE ...]'

# One rank, a thread and a stream. Launch calls of 10 us: t0 (the
# embedding, no layer), t1 (layer 0, an aten::mm with a 32x16 weight), t2
# (layer 1), t3 (the head); each launches its kernel: k0 5 us, k1 100 us,
# k2 120 us, k3 5 us. Thread edges with 1 us gaps; stream order.
mkrank() {
	cat <<'JSON' | mkstream
{"r":"header","format":"kgraph","major":1,"minor":2,"producer":"t","unit":"ns","rank":0,"world":1}
{"r":"str","id":0,"s":"cudaLaunchKernel"}
{"r":"str","id":1,"s":"gemm"}
{"r":"str","id":2,"s":"aten::mm"}
{"r":"str","id":3,"s":"[[64,32],[32,16]]"}
{"r":"proc","id":0,"k":"thread","pid":1,"tid":1,"main":true}
{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
{"r":"task","id":0,"p":0,"k":"rt","n":0,"d":10000,"ts":0,"it":1,"corr":1,"ph":"fwd"}
{"r":"task","id":1,"p":1,"k":"kern","n":1,"d":5000,"ts":10000,"it":1,"corr":1,"ph":"fwd"}
{"r":"task","id":2,"p":0,"k":"rt","n":0,"d":10000,"ts":11000,"it":1,"corr":2,"op":2,"sh":3,"ph":"fwd","ly":0}
{"r":"task","id":3,"p":1,"k":"kern","n":1,"d":100000,"ts":21000,"it":1,"corr":2,"op":2,"sh":3,"ph":"fwd","ly":0}
{"r":"task","id":4,"p":0,"k":"rt","n":0,"d":10000,"ts":22000,"it":1,"corr":3,"op":2,"sh":3,"ph":"fwd","ly":1}
{"r":"task","id":5,"p":1,"k":"kern","n":1,"d":120000,"ts":121000,"it":1,"corr":3,"op":2,"sh":3,"ph":"fwd","ly":1}
{"r":"task","id":6,"p":0,"k":"rt","n":0,"d":10000,"ts":33000,"it":1,"corr":4,"ph":"fwd"}
{"r":"task","id":7,"p":1,"k":"kern","n":1,"d":5000,"ts":241000,"it":1,"corr":4,"ph":"fwd"}
{"r":"edge","src":0,"dst":2,"k":"thread","dl":1000}
{"r":"edge","src":2,"dst":4,"k":"thread","dl":1000}
{"r":"edge","src":4,"dst":6,"k":"thread","dl":1000}
{"r":"edge","src":0,"dst":1,"k":"launch"}
{"r":"edge","src":2,"dst":3,"k":"launch"}
{"r":"edge","src":4,"dst":5,"k":"launch"}
{"r":"edge","src":6,"dst":7,"k":"launch"}
{"r":"edge","src":1,"dst":3,"k":"stream"}
{"r":"edge","src":3,"dst":5,"k":"stream"}
{"r":"edge","src":5,"dst":7,"k":"stream"}
{"r":"end","tasks":8,"edges":10,"procs":2,"strs":4}
JSON
}

# "ID NAME LAYER SS SE" of every simulated task
simulated() {
	graphsim -q "$1" | graphcat | "$ROOT/tests/tools/simjoin" |
		jq -r 'select(.r == "task") | "\(.id) \(.k) \(.ly // -1) \(.ss) \(.se)"'
}

@test "graph-scale-layers: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-scale-layers --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "graph-scale-layers: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-scale-layers.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-scale-layers: a missing or bad count, or bad options, are usage errors" {
	run -2 --separate-stderr graph-scale-layers
	[ "${stderr_lines[0]}" = "graph-scale-layers: missing the new layer count" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr graph-scale-layers 0
	[ "${stderr_lines[0]}" = "graph-scale-layers: invalid layer count '0'" ]
	run -2 --separate-stderr graph-scale-layers --gpus-per-node 0 4
	[ "${stderr_lines[0]}" = "graph-scale-layers: invalid --gpus-per-node '0'" ]
	run -2 --separate-stderr graph-scale-layers --bogus 4
	[ "${stderr_lines[1]}" = "$USAGE" ]
}

@test "graph-scale-layers: --version names the tool; a failed run leaves no output file" {
	run -0 graph-scale-layers --version
	[ "$output" = "graph-scale-layers (kgraph) 0.1" ]
	mkrank > rank.kg
	run -1 --separate-stderr graph-scale-layers -q -o out.kg 4 rank.kg missing.kg
	[ "$stderr" = "graph-scale-layers: missing.kg: No such file or directory" ]
	[ ! -e out.kg ]
	[ "$(ls -A | grep -v ^separate-stderr)" = rank.kg ]
	run -1 --separate-stderr bash -c 'graph-scale-layers -q 4 rank.kg > /dev/full'
	[ "$stderr" = "graph-scale-layers: stdout: write error: No space left on device" ]
}

@test "graph-scale-layers: pages faulted in on a thread or not, the same job" {
	# the input's and the new job's arrays are faulted in ahead by a
	# thread (common/prefault.h) past 64 MiB; =always starts it at once
	tracegen --preset tiny -d tr
	kineto2graph -q tr/*.json.gz | graph-deps --merge > base.kg
	KG_PREFAULT=0 graph-scale-layers -q 8 base.kg > a.kg
	KG_PREFAULT=always graph-scale-layers -q 8 base.kg > b.kg
	cmp a.kg b.kg
	[ "$(graphcat a.kg | grep -c '"r":"task"')" -gt "$(graphcat base.kg | grep -c '"r":"task"')" ]
}

@test "graph-scale-layers: the same count gives the same graph" {
	mkrank > rank.kg
	graph-scale-layers 2 rank.kg > same.kg
	diff <(graphcat rank.kg | grep -v '"header"' | sort) <(graphcat same.kg | grep -v '"header"' | sort)
	graphcat same.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-layers 0.1 set: layers=2"'
}

@test "graph-scale-layers: two layers grown to four: each copied twice, in order, the gaps kept" {
	# New layers 0, 1 copy layer 0; 2, 3 copy layer 1. A second copy takes
	# the mean of its kind of run (its thread's or stream's runs of the
	# same phase and names): the launches 10 us, the kernels (100 + 120)
	# / 2 = 110 us. Thread: t0 0-10; t1 11-21 and its copy 22-32 (the gap
	# after a layer, 1 us); t2 33-43 and 44-54; t3 55-65 (us). Stream: k0
	# 10-15; k1 21-121 and its copy 121-231 (launched at 32, the stream
	# busy); k2 231-351 and its copy 351-461; k3 461-466.
	mkrank > rank.kg
	graph-scale-layers 4 rank.kg > four.kg
	run -0 simulated four.kg
	[ "$output" = "0 rt -1 0 10000
1 kern -1 10000 15000
2 rt 0 11000 21000
3 rt 1 22000 32000
4 kern 0 21000 121000
5 kern 1 121000 231000
6 rt 2 33000 43000
7 rt 3 44000 54000
8 kern 2 231000 351000
9 kern 3 351000 461000
10 rt -1 55000 65000
11 kern -1 461000 466000" ]
	# every copy's launch edge joins its own kernel
	[ "$(graphcat four.kg | jq -c 'select(.r == "edge" and .k == "launch") | [.src, .dst]' | tr '\n' ' ')" = "[0,1] [2,4] [3,5] [6,8] [7,9] [10,11] " ]
	graph-deps --check four.kg
}

@test "graph-scale-layers: two layers shrunk to one: the first kept, its neighbours joined" {
	# t0 0-10, t1 11-21, t3 22-32 (the gap after layer 0 to what
	# followed it); k0 10-15, k1 21-121, k3 121-126 (us).
	mkrank > rank.kg
	graph-scale-layers 1 rank.kg > one.kg
	run -0 simulated one.kg
	[ "$output" = "0 rt -1 0 10000
1 kern -1 10000 15000
2 rt 0 11000 21000
3 kern 0 21000 121000
4 rt -1 22000 32000
5 kern -1 121000 126000" ]
}

@test "graph-scale-layers: tracegen's pipeline job: same count exact, more and fewer layers as generated within 1%" {
	# tiny: 4 layers over 2 stages, tp 2, dp 2. Predicted from the
	# 4-layer job against tracegen's own 2- and 8-layer jobs (same seed):
	# the iteration of the slowest rank, both iterations.
	tracegen --preset tiny -d base
	kineto2graph -q base/*.json.gz | graph-deps --merge > base.kg
	job_ms() { graphsim "$1" | graphstat --csv | awk -F, '$1 == "job" { print $4 }'; }
	# the simulated columns (a prediction leaves the measured ones empty)
	sim_cols() { graphstat --csv | cut -d, -f1,2,4,6-9,15; }
	[ "$(graph-scale-layers 4 base.kg | graphsim | sim_cols)" = "$(graphsim base.kg | sim_cols)" ]
	for n in 2 8; do
		tracegen --preset tiny --layers "$n" -d "t$n"
		kineto2graph -q "t$n"/*.json.gz | graph-deps --merge > "t$n.kg"
		graph-scale-layers "$n" base.kg > "p$n.kg"
		graph-deps --check "p$n.kg"
		paste -d' ' <(job_ms "t$n.kg") <(job_ms "p$n.kg") > cmp
		cat cmp
		awk '{ e = ($2 - $1) / $1; if (e < 0) e = -e; if (e > 0.01) exit 1 }' cmp
	done
}

@test "graph-scale-layers: the gradients grow by the new layers' parameters, counted from their shapes" {
	# tiny's layer, per tensor-parallel rank (hidden 256, ffn 1024, tp
	# 2), from the Input Dims of its forward launches: aten::mm weights
	# 256x384 + 128x256 + 256x512 + 512x256 = 393216, two layer norms
	# 2 x (256 + 256) = 1024, two bias adds 384 + 512 = 896: 395136
	# parameters. 4 -> 8 layers puts 2 more on each stage: rank 0's
	# data-parallel gradients (fp32, group [0, 2]) grow by 2 x 395136 x 4
	# = 3161088 bytes an iteration. (tracegen's own 8-layer job moves 4096
	# more: the row-parallel layers' biases, 2 x 256 a layer, which its
	# trace adds as full-size tensors, not as [256].)
	tracegen --preset tiny -d base
	kineto2graph -q base/*.json.gz | graph-deps --merge > base.kg
	graph-scale-layers 8 base.kg > eight.kg
	grads() {
		graphcat -r "$1" | jq -s '([.[] | select(.r == "proc" and .rank == 0) | .id]) as $p |
			[.[] | select(.r == "task" and .k == "coll" and .it == 10 and
			    .pgr == "[0, 2]" and (.p as $q | $p | index($q)) != null) | .by] | add'
	}
	[ $(($(grads eight.kg) - $(grads base.kg))) = 3161088 ]
}

@test "graph-scale-layers: a graph without layer tags, or too few layers for its stages, stops it" {
	mkrank | graphcat | sed 's/,"ly":[0-9]*//' | mkstream > rank.kg
	run -1 --separate-stderr graph-scale-layers 4 rank.kg
	[ "$stderr" = 'graph-scale-layers: rank.kg: section 0: no task has a layer tag: kineto2graph found no repeated block in the forward pass; name the layers with record_function ranges ("layer_3"), record nn.Module calls (with_stack=True) or give kineto2graph --layer-ops REGEX' ]
	run -1 bash -c 'graph-scale-layers 4 rank.kg | graphcat'
	tracegen --preset tiny --ranks 0,4 -d two
	kineto2graph -q two/*.json.gz | graph-deps --merge -q > two.kg 2>/dev/null || skip "merge of two ranks refused"
	run -1 --separate-stderr graph-scale-layers 1 two.kg
	[ "$stderr" = "graph-scale-layers: two.kg: section 0: 1 layers cannot fill 2 pipeline stages" ]
}

# The estimate in bytes, from the refusal's "(about X KiB)" (to 0.1 KiB).
estimate_bytes() {
	sed -n 's/.*(about \([0-9.]*\) KiB).*/\1/p' <<<"$1" | awk '{ printf "%d\n", $1 * 1024 }'
}

@test "graph-scale-layers: a graph over --max-memory is refused up front with the estimate; just under it is made" {
	mkrank > r.kg
	# 1000 layers: the embedding and the head, and each layer's launch and kernel
	run -1 --separate-stderr graph-scale-layers --max-memory 1K -o big.kg 1000 r.kg
	[[ "$stderr" == "graph-scale-layers: r.kg: section 0: 1000 layers would hold 2004 tasks and 2505 edges (about "*" KiB); the limit is 1.0 KiB (--max-memory)" ]]
	[ ! -e big.kg ]
	e=$(estimate_bytes "$stderr")
	[ "$e" -gt 50000 ]
	run -1 --separate-stderr graph-scale-layers --max-memory $((e - 103)) 1000 r.kg
	[[ "$stderr" == *"would hold 2004 tasks"* ]]
	run -0 --separate-stderr graph-scale-layers --max-memory $((e + 103)) -o big.kg 1000 r.kg
	[ "$(graphcat big.kg | grep -c '"r":"task"')" -eq 2004 ]
}

@test "graph-scale-layers: 2^20 layers past the process's memory limit are refused at once, not aborted" {
	if grep -q fsanitize "$ROOT/build/flags" 2>/dev/null; then
		skip "ulimit -v under a sanitizer build"
	fi
	mkrank > r.kg
	run -1 --separate-stderr timeout 1 bash -c 'ulimit -v 262144; graph-scale-layers -o big.kg 1048576 r.kg'
	[[ "$stderr" == *"1048576 layers would hold 2.1 million tasks and 2.6 million edges (about "*" MiB); the limit is 224.0 MiB (--max-memory, default: the machine's memory or the process's limit, less an eighth)" ]]
	[[ "$stderr" != *"out of memory"* ]]
	[ ! -e big.kg ]
}

@test "graph-scale-layers: a bad --max-memory is a usage error" {
	run -2 --separate-stderr graph-scale-layers --max-memory 12X 2
	[ "${stderr_lines[0]}" = "graph-scale-layers: invalid --max-memory '12X' (bytes, or with K, M, G, T)" ]
	run -2 --separate-stderr graph-scale-layers --max-memory 0 2
}
