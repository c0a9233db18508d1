#!/usr/bin/env bats
# graph-retime: the checklist; re-timing by models and factors worked
# out by hand on tests/fixtures/opmodel (GEMM kernels of exactly
# 2 m n k / 2^27 us; fast.jsonl: the same GEMMs twice as fast).

load helpers

bats_require_minimum_version 1.5.0

OM="$FIX/opmodel"
USAGE='usage: graph-retime [-q] [-o FILE] [--model MODEL [--from MODEL | --absolute]] [--speedup PATTERN=FACTOR] ... [--sensitivity [K]] [FILE ...]'

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	kineto2graph -q "$OM/mm.json" > mm.kg
	opmodel fit -o slow.om "$OM/mm.json" > /dev/null
	opmodel fit --min-us 0 -o fast.om "$OM/fast.jsonl" > /dev/null
}

# "KIND D" of every GPU task, in id order
gpu_durations() {
	graphcat "$1" | jq -r 'select(.r == "task" and (.k == "kern" or .k == "cpy")) | "\(.k) \(.d)"'
}

@test "graph-retime: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-retime --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
	run -0 graph-retime --version
	[[ $output == "graph-retime (kgraph) "* ]]
}

@test "graph-retime: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-retime.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-retime: unknown options and bad values are usage errors" {
	run -2 --separate-stderr graph-retime --bogus mm.kg
	run -2 --separate-stderr graph-retime --speedup gemm mm.kg
	[ "${stderr_lines[0]}" = "graph-retime: invalid --speedup 'gemm' (PATTERN=FACTOR)" ]
	run -2 --separate-stderr graph-retime --speedup gemm=0 mm.kg
	[ "${stderr_lines[0]}" = "graph-retime: invalid --speedup 'gemm=0' (FACTOR a number above 0)" ]
	run -2 --separate-stderr graph-retime --from slow.om mm.kg
	[ "${stderr_lines[0]}" = "graph-retime: --from needs --model (the GPU to predict)" ]
	run -2 --separate-stderr graph-retime --sensitivity=0 mm.kg
}

@test "graph-retime: a missing file exits 1 naming it; a bad model is one line" {
	run -1 --separate-stderr graph-retime nosuch.kg
	[ "$stderr" = "graph-retime: nosuch.kg: No such file or directory" ]
	run -1 --separate-stderr graph-retime --model nosuch.om mm.kg
	[ "$stderr" = "graph-retime: nosuch.om: No such file or directory" ]
	head -c 50 fast.om > cut.om
	run -1 --separate-stderr graph-retime --model cut.om mm.kg
	[ "$stderr" = "graph-retime: cut.om: truncated model file" ]
}

@test "graph-retime: empty, garbage and truncated streams exit 1 with the exact message" {
	run -1 --separate-stderr graph-retime < /dev/null
	[ "$stderr" = "graph-retime: -: empty input, not a graph stream" ]
	echo garbage > g.kg
	run -1 --separate-stderr graph-retime g.kg
	[ "$stderr" = "graph-retime: g.kg: not a graph stream (no zstd frame)" ]
	head -c 300 mm.kg > cut.kg
	run -1 --separate-stderr graph-retime -o out.kg cut.kg
	[ "$stderr" = "graph-retime: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
	[ ! -e out.kg ]
}

@test "graph-retime: --speedup divides the matching kernels' times" {
	graph-retime --speedup 'gemm=2' mm.kg > half.kg
	# GEMMs of 2000 ns and more halve; the 1 MiB memcpy's 100 us stay
	paste -d' ' <(gpu_durations mm.kg) <(gpu_durations half.kg) |
		awk '$1 == "kern" && $4 * 2 != $2 { exit 1 } $1 == "cpy" && $4 != $2 { exit 1 }'
	[ "$(gpu_durations half.kg | grep -c '^kern')" -eq 12 ]
	# by kernel name, and by operator: the same
	graph-retime --speedup 'gemm_kernel_*=2' mm.kg > byname.kg
	graph-retime --speedup 'aten::mm=2' mm.kg > byop.kg
	# (but for the header's tools entry, which names the pattern)
	diff <(dump half.kg | tail -n +2) <(dump byname.kg | tail -n +2)
	diff <(dump half.kg | tail -n +2) <(dump byop.kg | tail -n +2)
	[ "$(dump byop.kg | head -1 | jq -r '.tools[-1]')" = "graph-retime 0.1 speedup: aten::mm=2" ]
	# host tasks keep their times
	diff <(graphcat mm.kg | jq -c 'select(.r == "task" and .k == "cpu")') \
		<(graphcat half.kg | jq -c 'select(.r == "task" and .k == "cpu")')
}

@test "graph-retime: a --speedup pattern that matches nothing is said, with the classes there are" {
	# mm.json: GEMMs (gemm) and a 1 MiB memcpy (memory); "gemmm" names
	# no class, operator or kernel
	run -0 --separate-stderr graph-retime --speedup 'gemmm=2' --speedup 'gemm=2' -o out.kg mm.kg
	[ "$stderr" = "graph-retime: warning: mm.kg: section 0: --speedup 'gemmm=2' matches no kernel's class, operator or name (its classes: gemm, memory)" ]
	run -0 --separate-stderr graph-retime -q --speedup 'gemmm=2' -o out.kg mm.kg
	[ -z "$stderr" ]
}

@test "graph-retime: frames whose records do not change pass as they came, the rest as decoded" {
	# tracegen's small model on one GPU: its graph's tasks fill one 2 MiB
	# frame and part of the next, its edges the rest. Twice as fast GEMMs
	# change tasks only: the edges' frame goes out byte for byte (the
	# frames are told apart by tests/tools/zframes.py), and every record
	# decodes as before but the GEMM kernels' durations (and the traced
	# ones they now keep, `od`) and the header.
	tracegen --preset small --tp 1 --pp 1 --dp 1 --iterations 1 -d j
	kineto2graph -q j/rank-0.json.gz > in.kg
	graph-retime -q --speedup 'gemm=2' in.kg > out.kg
	frames() { python3 "$ROOT/tests/tools/zframes.py" "$1" | awk '$2 > 1000 { print $3 }' | sort; }
	[ "$(comm -12 <(frames in.kg) <(frames out.kg) | wc -l)" -ge 1 ]
	[ "$(comm -13 <(frames in.kg) <(frames out.kg) | wc -l)" -ge 1 ]
	diff <(graphcat in.kg | jq -c 'select(.r != "header") | del(.d, .od)') \
	    <(graphcat out.kg | jq -c 'select(.r != "header") | del(.d, .od)')
	[ "$(paste <(graphcat in.kg | jq -r 'select(.r == "task") | .d') \
	    <(graphcat out.kg | jq -r 'select(.r == "task") | .d') | awk '$1 != $2' | wc -l)" -gt 0 ]
	graph-deps --check out.kg > /dev/null
}

@test "graph-retime: kineto2graph's run of host tasks passes as it came: only the GPU run's frames are written anew" {
	# three iterations of tracegen's small model: the host's tasks fill
	# the first 2 MiB frame after the header, the GPU's the next two
	# (kineto2graph writes the runs one after the other); the host's
	# frame goes out byte for byte, as the edges' does
	tracegen --preset small --tp 1 --pp 1 --dp 1 --iterations 3 -d j
	kineto2graph -q j/rank-0.json.gz > in.kg
	graph-retime -q --speedup 'gemm=2' in.kg > out.kg
	python3 "$ROOT/tests/tools/zframes.py" in.kg > in.fr
	python3 "$ROOT/tests/tools/zframes.py" out.kg > out.fr
	[ "$(wc -l < in.fr)" -ge 5 ]
	host=$(sed -n 2p in.fr | cut -d' ' -f3)
	edges=$(tail -n 2 in.fr | head -n 1 | cut -d' ' -f3)
	grep -q " $host\$" out.fr
	grep -q " $edges\$" out.fr
	# that frame holds tasks, none of them the GPU's
	[ "$(graphcat in.kg | jq -r 'select(.r == "task") | .k' | head -n 1000 | sort -u | tr '\n' ' ')" = "cpu rt " ]
}

@test "graph-retime: --model predicts each call for the model's GPU" {
	graph-retime --model fast.om mm.kg > fast.kg
	# GEMMs: m n k / 2^27 us, half the traced time
	paste -d' ' <(gpu_durations mm.kg) <(gpu_durations fast.kg) |
		awk '$1 == "kern" && $4 * 2 != $2 { exit 1 }'
	# the memcpy: no memory samples on Fast GPU, so its roofline: bytes/s
	# of the FLOP/s (2^28 a us) over 100: 2^20 * 100 / 2^28 us = 390.625 ns
	[ "$(gpu_durations fast.kg | grep '^cpy')" = "cpy 391" ]
}

@test "graph-retime: each call of an operator is re-timed alone, also two on one shape back to back" {
	kineto2graph -q "$OM/backtoback.json" > b.kg
	graph-retime --model fast.om b.kg > bf.kg
	# Fast GPU: 2048 x 1024 x 2048 in m n k / 2^27 = 32 us a call. The two
	# 64 us calls take 32 us each (not 16: one call of 128 us); the third
	# call's 32 + 4 us share its 32 us as they shared its time
	[ "$(gpu_durations bf.kg | tr '\n' ' ')" = "kern 32000 kern 32000 kern 28444 kern 3556 " ]
	# each launch and kernel names its call
	[ "$(graphcat b.kg | jq -r 'select(.r == "task" and .k != "cpu") | .oc' | sort -u | wc -l)" -eq 3 ]
}

@test "graph-retime: --from scales by the ratio of the two models" {
	graph-retime --model slow.om --from slow.om mm.kg > same.kg
	diff <(dump mm.kg | jq -c 'select(.r != "header")') <(dump same.kg | jq -c 'select(.r != "header")')
	graph-retime --model fast.om --from slow.om mm.kg > fast.kg
	# GEMMs by trees-less rooflines of 2^28 and 2^27 FLOP/us: half; the
	# memcpy by the two bandwidths (each FLOP/s over 100): half too
	paste -d' ' <(gpu_durations mm.kg) <(gpu_durations fast.kg) |
		awk '$4 * 2 != $2 { exit 1 }'
}

@test "graph-retime: composes with graphsim and graphstat in a pipe" {
	graph-retime --speedup 'gemm=2' mm.kg | graphsim | graphstat --csv > stat.csv
	graphsim mm.kg | graphstat --csv > base.csv
	# one iteration; faster GEMMs, a shorter simulated iteration
	[ "$(wc -l < stat.csv)" -eq 2 ]
	[ "$(tail -1 stat.csv | cut -d, -f4)" -lt "$(tail -1 base.csv | cut -d, -f4)" ]
	[ "$(dump mm.kg | head -1 | jq -r '.tools | length')" -eq 1 ]
	[ "$(graph-retime mm.kg | graphcat | head -1 | jq -r '.tools[1]')" = "graph-retime 0.1" ]
}

@test "graph-retime: --sensitivity prints each group's gain twice as fast" {
	run -0 --separate-stderr graph-retime --sensitivity 1 mm.kg
	[[ "${lines[0]}" == "iteration "*" ms simulated; GPU time in the graph "*" ms" ]]
	[ "$(echo "${lines[1]}" | tr -s ' ')" = "class operator gpu_ms gpu% iter_ms gain_ms gain%" ]
	# the GEMMs are most of the GPU time, one row (K 1)
	[ "${#lines[@]}" -eq 3 ]
	set -- ${lines[2]}
	[ "$1" = gemm ] && [ "$2" = aten::mm ]
	# the gain is the base less the new iteration
	base=$(echo "${lines[0]}" | awk '{print $2}')
	[ "$(echo "$base $5 $6" | awk '{ d = $1 - $2 - $3; print (d < 0.002 && d > -0.002) }')" = 1 ]
	run -2 --separate-stderr graph-retime --sensitivity -o x.kg mm.kg
}

@test "graph-retime: --sensitivity on a graph of host tasks only prints the iteration and no row, with a warning" {
	# no GPU group: the empty list once went to qsort and memcpy (UBSan)
	"$ROOT/tests/tools/hostile" cpu-only > cpu.kg
	run -0 --separate-stderr graph-retime --sensitivity 3 cpu.kg
	[ "$stderr" = "graph-retime: warning: no GPU kernel to speed up: the graph's GPU work is communication only, or none" ]
	# the two tasks in a row on the main thread: 150 ns, 0.000 ms
	[ "${lines[0]}" = "iteration 0.000 ms simulated; GPU time in the graph 0.000 ms" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "graph-retime: --sensitivity leaves nothing in TMPDIR, done, failed or ended by a signal" {
	local pid w st=0
	mkdir tmp
	TMPDIR=$PWD/tmp run -0 graph-retime --sensitivity 1 mm.kg
	[ -z "$(ls -A tmp)" ]
	# a graph without iterations cannot be simulated into one
	"$ROOT/tests/tools/hostile" time-edge > edge.kg
	TMPDIR=$PWD/tmp run -1 --separate-stderr graph-retime -q --sensitivity 1 edge.kg
	[ "${stderr_lines[-1]}" = "graph-retime: simulation failed: $ROOT/bin/graphsim | graphstat --csv" ]
	[ -z "$(ls -A tmp)" ]
	# SIGTERM while it reads its input
	mkfifo in.fifo
	TMPDIR=$PWD/tmp env --default-signal=TERM graph-retime --sensitivity 1 - < in.fifo 2> err.txt &
	pid=$!
	exec {w}> in.fifo
	for i in $(seq 200); do
		compgen -G 'tmp/graph-retime.*/base.kg.tmp*' > /dev/null && break
		sleep 0.05
	done
	compgen -G 'tmp/graph-retime.*/base.kg.tmp*' > /dev/null # it was there
	kill -s TERM "$pid"
	wait "$pid" || st=$?
	exec {w}>&-
	[ "$st" -eq 143 ]
	[ -z "$(ls -A tmp)" ]
}

@test "graph-retime: a factor that takes a time past the format's range is refused, with nothing written" {
	# 2000 ns times 1e300 (once: a negative duration written, exit 0)
	run -1 --separate-stderr graph-retime --speedup 'gemm=1e-300' -o out.kg mm.kg
	[ "$stderr" = "graph-retime: mm.kg: section 0: task 13 re-timed to 2e+303 ns, beyond the format's range (2^53 ns)" ]
	[ ! -e out.kg ]
	run -0 graph-retime --speedup 'gemm=1e-9' -o out.kg mm.kg
	[ "$(gpu_durations out.kg | head -1)" = "kern 2000000000000" ]
}

@test "graph-retime: a write error exits 1; | head prints nothing on stderr" {
	run -1 --separate-stderr bash -c 'graph-retime mm.kg > /dev/full'
	[ "$stderr" = "graph-retime: stdout: write error: No space left on device" ]
	run -0 --separate-stderr bash -c 'graph-retime --speedup gemm=2 mm.kg | graphcat | head -1'
	[ -z "$stderr" ]
}

@test "graph-retime: stdin gives the same as the file operand" {
	graph-retime --model fast.om mm.kg > a.kg
	graph-retime --model fast.om < mm.kg > b.kg
	diff <(dump a.kg) <(dump b.kg)
}

@test "graph-retime: a graph traced on the model's GPU keeps its traced times; --absolute predicts them" {
	# mm.kg as if traced on Fast GPU, whose GEMMs take half the time
	graphcat mm.kg | sed '1s/"gpu":"Test GPU"/"gpu":"Fast GPU"/' | "$ROOT/tests/tools/jsonl2kg" |
		zstd -q -c > onfast.kg
	run -0 --separate-stderr graph-retime -o keep.kg --model fast.om onfast.kg
	[ "$stderr" = "" ]
	diff <(gpu_durations onfast.kg) <(gpu_durations keep.kg)
	graph-retime --model fast.om --absolute onfast.kg > abs.kg
	paste -d' ' <(gpu_durations onfast.kg) <(gpu_durations abs.kg) |
		awk '$1 == "kern" && $4 * 2 != $2 { exit 1 }'
	# speed-ups still apply
	graph-retime --model fast.om --speedup gemm=2 onfast.kg > sp.kg
	diff <(gpu_durations abs.kg | grep kern) <(gpu_durations sp.kg | grep kern)
	run -2 --separate-stderr graph-retime --absolute mm.kg
	[ "${stderr_lines[0]}" = "graph-retime: --absolute needs --model and no --from" ]
}

@test "graph-retime: a model of another GPU than the graph's is a warning naming both; the output runs on the model's GPU" {
	run -0 --separate-stderr graph-retime -o f.kg --model fast.om --from fast.om mm.kg
	[ "$stderr" = "graph-retime: warning: mm.kg: section 0: a graph of Test GPU re-timed from a model of Fast GPU (--from)" ]
	run -0 --separate-stderr graph-retime -o a.kg --model fast.om mm.kg
	[ "$stderr" = "graph-retime: warning: mm.kg: section 0: a graph of Test GPU re-timed by the model of Fast GPU alone: each call takes its prediction (--from with a model of Test GPU keeps what the models do not explain)" ]
	run -0 --separate-stderr graph-retime -q -o a.kg --model fast.om mm.kg
	[ "$stderr" = "" ]
	[ "$(dump mm.kg | head -1 | jq -r .gpu)" = "Test GPU" ]
	[ "$(dump a.kg | head -1 | jq -r '[.gpu, .gpu_sms] | @tsv')" = "$(printf 'Fast GPU\t100')" ]
}

@test "graph-retime: a graph without operator shapes cannot be re-timed by a model: one line saying how to record them" {
	jq 'del(.traceEvents[].args["Input Dims"])' "$OM/mm.json" > noshapes.json
	kineto2graph -q noshapes.json > ns.kg
	run -1 --separate-stderr graph-retime -q -o out.kg --model fast.om ns.kg
	[ "$stderr" = "graph-retime: ns.kg: section 0: no operator shapes (the trace was recorded without record_shapes): the model cannot size a call; record with torch.profiler.profile(record_shapes=True)" ]
	[ ! -e out.kg ]
	# factors need no shapes
	run -0 --separate-stderr graph-retime -o out.kg --speedup 'gemm_kernel_*=2' ns.kg
}

@test "graph-retime: --model and --from fitted on unlike inputs are warned about, naming the class" {
	# data/gpu's op sweep fits the attention classes on 618 calls each;
	# fast.om has none: the ratio would be the inputs' difference
	opmodel fit -o ops.om "$ROOT/data/gpu/h100/op_sweep.json.gz" > /dev/null
	run -0 --separate-stderr graph-retime -o out.kg --model fast.om --from ops.om mm.kg
	[[ "$stderr" == *"graph-retime: warning: fast.om (--model) and ops.om (--from) were fitted on unlike inputs: class attn_fwd has 0 samples in the first and 618 in the second, and "*" more classes differ so; "* ]]
	# like inputs (the same fixture, 12 GEMMs in each): no such warning
	run -0 --separate-stderr graph-retime -o out.kg --model fast.om --from slow.om mm.kg
	[[ "$stderr" != *"unlike inputs"* ]]
	# -q: no warnings
	run -0 --separate-stderr graph-retime -q -o out.kg --model fast.om --from ops.om mm.kg
	[ -z "$stderr" ]
}
