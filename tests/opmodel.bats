#!/usr/bin/env bats
# opmodel: the checklist; a fit whose predictions are worked out by hand
# (tests/fixtures/opmodel/gen.py: GEMMs of exactly 2 m n k / 2^27 us on
# a GPU of 100 SMs); the robustness cases of the model file and traces.

load helpers

bats_require_minimum_version 1.5.0

OM="$FIX/opmodel"

fit() { # a model of the fixture trace into m.om
	opmodel fit -o m.om "$OM/mm.json" > /dev/null
}

@test "opmodel: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr opmodel --help
	[ "${lines[0]}" = "usage: opmodel fit [-q] -o MODEL [--gpu NAME] [--sms N] [--min-us US] [--features LIST]" ]
	[ -z "$stderr" ]
	run -0 --separate-stderr opmodel check --help
	[ "${lines[0]%% *}" = "usage:" ]
}

@test "opmodel: a missing or unknown command, and unknown options, are usage errors" {
	run -2 --separate-stderr opmodel
	[ "${stderr_lines[0]}" = "opmodel: missing the command: fit, check or predict" ]
	run -2 --separate-stderr opmodel frobnicate
	[ "${stderr_lines[0]}" = "opmodel: unknown command 'frobnicate' (fit, check or predict)" ]
	run -2 --separate-stderr opmodel fit --bogus -o m.om
	run -2 --separate-stderr opmodel fit "$OM/mm.json"
	[ "${stderr_lines[0]}" = "opmodel: fit: missing -o MODEL" ]
	run -2 --separate-stderr opmodel check --gpu X m.om
	run -2 --separate-stderr opmodel fit -o m.om --features sizes,colour "$OM/mm.json"
	run -2 --separate-stderr opmodel fit -o m.om --min-us -1 "$OM/mm.json"
	[ ! -e m.om ]
}

@test "opmodel: a missing input exits 1 naming it, and writes no model" {
	run -1 --separate-stderr opmodel fit -o m.om nonexistent.json
	[ "$stderr" = "opmodel: nonexistent.json: No such file or directory" ]
	[ ! -e m.om ]
}

@test "opmodel: empty, garbage and truncated inputs exit 1 with one line" {
	: > empty.json
	run -1 --separate-stderr opmodel fit -o m.om empty.json
	[ "$stderr" = "opmodel: empty.json: empty input" ]
	echo 'not json' > bad.json
	run -1 --separate-stderr opmodel fit -o m.om bad.json
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "opmodel: bad.json: byte 1: invalid JSON"* ]]
	head -c 2000 "$OM/mm.json" | gzip > cut.json.gz
	run -1 --separate-stderr opmodel fit -o m.om cut.json.gz
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "opmodel: cut.json.gz: "* ]]
	gzip -c "$OM/mm.json" | head -c 700 > cutgz.json.gz
	run -1 --separate-stderr opmodel fit -o m.om cutgz.json.gz
	[ "$stderr" = "opmodel: cutgz.json.gz: truncated gzip data" ]
	printf '{"meta": {"gpu": "G"}}\n{"op": "mm", "us": 3}\n' > rows.jsonl
	run -1 --separate-stderr opmodel fit -o m.om rows.jsonl
	[ "$stderr" = "opmodel: rows.jsonl: line 2: a mm row without its sizes" ]
	[ ! -e m.om ]
}

@test "opmodel: fit names the trace's GPU and SM count, and every class" {
	run -0 --separate-stderr opmodel fit -o m.om "$OM/mm.json"
	# deviceProperties: "Test GPU", 100 SMs; 2^27 FLOP/us = 134 TFLOP/s
	[ "${lines[0]}" = "model of Test GPU, 100 SMs: roofline 134 TFLOP/s, 1342 GB/s" ]
	# 12 GEMM calls and one memcpy; under 20 samples: rooflines
	[[ "${lines[2]}" == "gemm      roofline      12 "* ]]
	[[ "${lines[9]}" == "memory    roofline       1 "* ]]
	[ "${lines[11]}" = "roofline fallbacks: 9 of 9 classes (fewer than 20 samples)" ]
	head -3 m.om | tail -2 > head.txt
	printf 'gpu Test GPU\nsms 100\n' | diff - head.txt
}

@test "opmodel: predict gives a GEMM's roofline time, worked out by hand" {
	fit
	# 2 * 4096^3 / 2^27 us = 1024 us; a 2 GiB memcpy at 1 MiB per 100 us
	# is not what predict reads (OP DIMS lines only)
	printf 'aten::mm [[4096,4096],[4096,4096]]\n# a comment\n\naten::addmm [[64],[512,512],[512,64]]\nweird::op [[3]]\naten::_foreach_mul_ [[],[]]\n' > in.txt
	run -0 --separate-stderr opmodel predict m.om in.txt
	[ "${lines[0]}" = "gemm 1024.000" ]
	# addmm: m 512, k 512, n 64 moves 2 (512 512 + 2 512 64) = 655360
	# bytes; with no streaming samples the bytes/s are the FLOP/s over
	# 100: 655360 * 100 / 2^27 = 0.488 us, above its 0.25 us of FLOPs
	[ "${lines[1]}" = "gemm 0.488" ]
	# a class without samples: the roofline, 2 (3 + 3) bytes: 0.000 us
	[ "${lines[2]}" = "other 0.000" ]
	# an optimizer's tensor lists (sizes unrecorded): no prediction
	[ "${lines[3]}" = "optim -" ]
	[ -z "$stderr" ]
	run -0 opmodel predict m.om < in.txt
	[ "${lines[0]}" = "gemm 1024.000" ]
}

@test "opmodel: an operator the other class never saw takes the elementwise class's efficiency" {
	# the fixture's GEMMs set the roofline; elementwise adds taking 100
	# and then 200 us (one class, fewer than 20 samples: the roofline
	# times their median measured-over-roofline). A reduction nothing
	# timed (class other, no samples of its own) is predicted by the
	# roofline times that median: twice as long with adds twice as
	# slow; without adds, the roofline alone.
	add() { # US: a sweep of adds taking US each
		echo '{"meta": {"gpu": "Test GPU", "sms": 100}}'
		for t in 1024 2048 4096; do
			echo "{\"op\": \"add\", \"dtype\": \"bf16\", \"tokens\": $t, \"h\": 1024, \"us\": $1}"
		done
	}
	add 100 > a1.jsonl
	add 200 > a2.jsonl
	opmodel fit -o m0.om "$OM/mm.json" > /dev/null
	opmodel fit -o m1.om "$OM/mm.json" a1.jsonl > /dev/null
	opmodel fit -o m2.om "$OM/mm.json" a2.jsonl > /dev/null
	echo 'aten::sum [[8192,10240],[],[],[]]' > in.txt
	p0=$(opmodel predict m0.om in.txt) p1=$(opmodel predict m1.om in.txt) p2=$(opmodel predict m2.om in.txt)
	[ "${p0%% *}" = other ] && [ "${p1%% *}" = other ]
	awk -v a="${p0#* }" -v b="${p1#* }" -v c="${p2#* }" 'BEGIN { exit !(b > a && c / b > 1.999 && c / b < 2.001) }'
}

@test "opmodel: a memory-bound call's bytes count each operand in its element type" {
	# tests/fixtures/opmodel/types.json: two layer norms of [4096, 1024],
	# one on bf16 tensors, one on fp32 (Input type). The fixture model
	# has no norm samples: the roofline, bytes over the bytes/s (with no
	# streaming samples, the FLOP/s over 100: 2^27 / 100 bytes a us). A
	# norm's forward reads its activation and writes as much: 2 x 4096 x
	# 1024 elements, 2^24 bytes in bf16 (12.5 us), twice that in fp32.
	fit
	run -0 --separate-stderr opmodel check -q --csv m.om "$OM/types.json"
	[ "$(printf '%s\n' "${lines[@]}" | cut -d, -f4 | tail -n +2 | tr '\n' ' ')" = "12.500 25.000 " ]
}

@test "opmodel: predict refuses a line that is not OP DIMS" {
	fit
	echo 'aten::mm' | { run -1 --separate-stderr opmodel predict m.om; [ "$stderr" = "opmodel: -: line 1: expected 'OP DIMS [KERNEL]'" ]; }
	printf 'aten::mm [[1,2]\n' > bad.txt
	run -1 --separate-stderr opmodel predict m.om bad.txt
	[ "$stderr" = "opmodel: bad.txt: line 1: unbalanced brackets in the dims" ]
}

@test "opmodel: check compares each call, and the CSV has one row a call" {
	fit
	run -0 --separate-stderr opmodel check m.om "$OM/mm.json"
	# the kernels follow the roofline exactly: no error
	[ "${lines[2]}" = "gemm           12    73.5      12      0.00     0.00" ]
	run -0 --separate-stderr opmodel check --csv m.om "$OM/mm.json"
	[ "${lines[0]}" = "class,kernel,traced_us,predicted_us,how,op,dims" ]
	# 12 GEMMs and a memcpy
	[ "${#lines[@]}" -eq 14 ]
	# 2 * 2048^3 / 2^27 = 128 us
	printf '%s\n' "${lines[@]}" | grep -Fqx 'gemm,"gemm_kernel_11",128.000,128.000,roofline,"aten::mm","[[2048,2048],[2048,2048]]"'
}

@test "opmodel: check lists the calls furthest off, each with why: a misread shape, launch-bound, or the model" {
	fit
	# Adds of bf16 [1024, 1024] twice and one [8, 64]. The fixture model
	# has no adds: the roofline, bytes at 2^27 / 100 bytes a us; an add
	# moves 3 operands: 6 MiB in 4.6875 us, 3 KiB in 0.002 us. Traced 1 us
	# is less than half of 4.6875: no kernel of that shape runs so fast,
	# the shape read is wrong (+369%); 6 us for 0.002 us of work is a
	# kernel's fixed cost (-100%); 30 us for 4.6875 is the model's error
	# (-84%).
	{
		echo '{"meta": {"gpu": "Test GPU", "sms": 100}}'
		echo '{"op": "add", "dtype": "bf16", "tokens": 1024, "h": 1024, "us": 1}'
		echo '{"op": "add", "dtype": "bf16", "tokens": 1024, "h": 1024, "us": 30}'
		echo '{"op": "add", "dtype": "bf16", "tokens": 8, "h": 64, "us": 6}'
	} > adds.jsonl
	run -0 --separate-stderr opmodel check m.om adds.jsonl
	[ "${lines[4]}" = "outliers (50% off or more: 3), the worst:" ]
	[ "${lines[5]}" = "  eltwise       +369%  traced 1.000 us, predicted 4.688 us, its work 4.688 us: a misread shape (its dims need more than the traced time); aten::add [[1024,1024],[1024,1024],[]]" ]
	[ "${lines[6]}" = "  eltwise       -100%  traced 6.000 us, predicted 0.002 us, its work 0.002 us: launch-bound (the kernel's fixed cost, which no shape tells); aten::add [[8,64],[8,64],[]]" ]
	[ "${lines[7]}" = "  eltwise        -84%  traced 30.000 us, predicted 4.688 us, its work 4.688 us: the model errs on this shape (its work fits its time); aten::add [[1024,1024],[1024,1024],[]]" ]
	[ "${#lines[@]}" -eq 8 ]
}

@test "opmodel: two calls of one operator on one shape back to back are two calls" {
	fit
	# backtoback.json: aten::mm on one shape three times; the first two
	# launch a kernel of 64 us each, the third a GEMM and a reduce
	# (32 + 4 us): three calls, the third's time its two kernels'
	run -0 --separate-stderr opmodel check --csv m.om "$OM/backtoback.json"
	[ "${#lines[@]}" -eq 4 ]
	[ "${lines[1]}" = 'gemm,"gemm_kernel",64.000,64.000,roofline,"aten::mm","[[2048,2048],[2048,1024]]"' ]
	[ "${lines[2]}" = "${lines[1]}" ]
	[ "${lines[3]}" = 'gemm,"gemm_kernel",36.000,64.000,roofline,"aten::mm","[[2048,2048],[2048,1024]]"' ]
}

@test "opmodel: a trace without record_shapes says so and how to record one" {
	run -1 --separate-stderr opmodel fit -o m.om "$OM/noshapes.json"
	[ "$stderr" = "opmodel: $OM/noshapes.json: no operator shapes (the trace was recorded without record_shapes): record with torch.profiler.profile(record_shapes=True)" ]
	fit
	run -1 --separate-stderr opmodel check m.om "$OM/noshapes.json"
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "opmodel: a model of another GPU than the trace's is a warning naming both" {
	opmodel fit -o fast.om "$OM/fast.jsonl" > /dev/null
	run -0 --separate-stderr opmodel check fast.om "$OM/mm.json"
	[ "$stderr" = "opmodel: warning: $OM/mm.json: a trace of Test GPU checked with a model of Fast GPU" ]
	run -0 --separate-stderr opmodel check -q fast.om "$OM/mm.json"
	[ -z "$stderr" ]
}

@test "opmodel: inputs of two GPUs are refused; --gpu names the model's GPU" {
	run -1 --separate-stderr opmodel fit -o m.om "$OM/mm.json" "$OM/fast.jsonl"
	[ "$stderr" = "opmodel: $OM/fast.jsonl: a trace of Fast GPU, but $OM/mm.json is of Test GPU: one model per GPU (--gpu to override)" ]
	run -0 opmodel fit --gpu 'My GPU' -o m.om "$OM/mm.json"
	[ "$(sed -n 2p m.om)" = "gpu My GPU" ]
}

@test "opmodel: a sweep's host-bound rows are dropped and counted" {
	# the 12 rows take 1 to 64 us (m n k / 2^27): only 2048^3 reaches 40
	run -0 --separate-stderr opmodel fit -o m.om "$OM/fast.jsonl"
	[ "${lines[12]}" = "sweep timings not used: 11 host-bound (under 40 us, or SDPA under 5 times its fastest call), 0 of several operators, 0 without a positive time, 0 forwards as long as their backward" ]
	run -0 --separate-stderr opmodel fit --min-us 0 -o m.om "$OM/fast.jsonl"
	[[ "${lines[2]}" == "gemm      roofline      12 "* ]]
}

@test "opmodel: a truncated, other-version or foreign model file is refused in one line" {
	fit
	head -c 100 m.om > cut.om
	run -1 --separate-stderr opmodel predict cut.om /dev/null
	[ "$stderr" = "opmodel: cut.om: truncated model file" ]
	sed '1s/ 3$/ 1/' m.om > v1.om
	run -1 --separate-stderr opmodel check v1.om "$OM/mm.json"
	[ "$stderr" = "opmodel: v1.om: unsupported model version 1 (this opmodel reads 2 to 3)" ]
	cp "$OM/mm.json" notmodel.om
	run -1 --separate-stderr opmodel predict notmodel.om /dev/null
	[ "$stderr" = "opmodel: notmodel.om: not an opmodel model file" ]
	sed 's/^sms 100$/sms 101/' m.om > edited.om
	run -1 --separate-stderr opmodel predict edited.om /dev/null
	[ "$stderr" = "opmodel: edited.om: corrupt model file (checksum mismatch)" ]
	run -1 --separate-stderr opmodel predict nothere.om /dev/null
	[ "$stderr" = "opmodel: nothere.om: No such file or directory" ]
}

@test "opmodel: a version 2 model (JSON trees) is read and predicts as version 3 (UBJSON trees)" {
	gzip -dc "$OM/v2trees.om.gz" > v2.om
	[ "$(head -1 v2.om)" = "kgraph-opmodel 2" ]
	run -0 --separate-stderr opmodel fit -o v3.om "$OM/trees.jsonl"
	[[ "${lines[2]}" == "gemm      trees "* ]]
	[ "$(head -1 v3.om)" = "kgraph-opmodel 3" ]
	printf 'aten::mm [[1000,3000],[3000,700]]\naten::mm [[2048,4096],[4096,512]]\naten::mm [[100,100],[100,100]]\n' > in.txt
	opmodel predict v2.om in.txt > p2.txt
	opmodel predict v3.om in.txt > p3.txt
	[ "$(wc -l < p3.txt)" -eq 3 ]
	diff p2.txt p3.txt
	opmodel check v2.om "$OM/trees.jsonl" > c2.txt
	opmodel check v3.om "$OM/trees.jsonl" > c3.txt
	diff c2.txt c3.txt
}

@test "opmodel: a write error on stdout exits 1" {
	fit
	run -1 --separate-stderr bash -c 'opmodel check m.om "$1" > /dev/full' _ "$OM/mm.json"
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -1 --separate-stderr bash -c 'echo "aten::mm [[1,1],[1,1]]" | opmodel predict m.om > /dev/full'
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -1 --separate-stderr opmodel fit -o /dev/full/m.om "$OM/mm.json"
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "opmodel: | head prints nothing on stderr" {
	fit
	run -0 --separate-stderr bash -c "opmodel check --csv m.om '$OM/mm.json' | head -1"
	[ "$output" = "class,kernel,traced_us,predicted_us,how,op,dims" ]
	[ -z "$stderr" ]
}

@test "opmodel: stdin gives the same as the file operand" {
	fit
	opmodel check --csv m.om "$OM/mm.json" > file.csv
	opmodel check --csv m.om < "$OM/mm.json" > stdin.csv
	diff file.csv stdin.csv
	opmodel fit -o s.om < "$OM/mm.json" > /dev/null
	cmp m.om s.om
}

@test "opmodel: fit on a graph stream on stdin equals fit on its trace" {
	opmodel fit -o t.om "$OM/mm.json" > t.txt
	run -0 --separate-stderr bash -c 'kineto2graph "$1" | opmodel fit -o g.om -' _ "$OM/mm.json"
	[ "$output" = "$(cat t.txt)" ]
	[ -z "$stderr" ]
	cmp t.om g.om
}

@test "opmodel: check on a graph stream file reads each section as its trace" {
	fit
	kineto2graph "$OM/mm.json" "$OM/backtoback.json" > two.kg
	opmodel check --csv m.om "$OM/mm.json" "$OM/backtoback.json" > t.csv
	# 12 GEMMs and a memcpy, then the second trace's calls
	[ "$(wc -l < t.csv)" -gt 14 ]
	run -0 --separate-stderr opmodel check --csv m.om two.kg
	[ "$output" = "$(cat t.csv)" ]
	[ -z "$stderr" ]
	opmodel check m.om "$OM/mm.json" "$OM/backtoback.json" > t.txt
	run -0 --separate-stderr opmodel check m.om two.kg
	[ "$output" = "$(cat t.txt)" ]
	[ -z "$stderr" ]
}

@test "opmodel: a graph stream cut short, or one whose writer failed, is refused in one line" {
	kineto2graph "$OM/mm.json" | head -c 300 > cut.kg
	run -1 --separate-stderr opmodel fit -o m.om cut.kg
	[ "$stderr" = "opmodel: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
	echo 'not json' > bad.json
	run -1 bash -c 'kineto2graph bad.json > failed.kg'
	run -1 --separate-stderr opmodel fit -o m.om failed.kg
	[ "$stderr" = "opmodel: failed.kg: incomplete graph stream: it ends where kineto2graph failed (record 1)" ]
	# through a pipe the writer said why: its message alone
	run -1 --separate-stderr bash -c 'kineto2graph bad.json | opmodel fit -o m.om -'
	[ "$stderr" = "kineto2graph: bad.json: byte 1: invalid JSON (lexical error: invalid string in json text.)" ]
	[ ! -e m.om ]
}

@test "opmodel: a trace goes through the kineto2graph beside it, else PATH's, its messages naming the trace" {
	mkdir lone
	cp "$ROOT/bin/opmodel" lone/
	run -1 --separate-stderr env PATH=/nonexistent lone/opmodel fit -o m.om "$OM/mm.json"
	[ "$stderr" = "opmodel: $OM/mm.json: cannot run kineto2graph: No such file or directory" ]
	opmodel fit -o t.om "$OM/mm.json" > t.txt
	run -0 --separate-stderr env PATH="$ROOT/bin:$PATH" lone/opmodel fit -o m.om "$OM/mm.json"
	[ "$output" = "$(cat t.txt)" ]
	cmp t.om m.om
	# one beside it comes first; what it says is said of the trace
	printf '#!/bin/sh\ncat > /dev/null\necho "kineto2graph: -: byte 7: made up" >&2\nexit 1\n' > lone/kineto2graph
	chmod +x lone/kineto2graph
	run -1 --separate-stderr lone/opmodel fit -o m.om "$OM/mm.json"
	[ "$stderr" = "opmodel: $OM/mm.json: byte 7: made up" ]
	run -1 --separate-stderr lone/opmodel check t.om - < "$OM/mm.json"
	[ "$stderr" = "opmodel: -: byte 7: made up" ]
}

@test "opmodel: the shared H100 sweep fits with trees, and its GEMMs check" {
	K="$ROOT/../shared/gpu/kernels/h100"
	[ -f "$K/kernels.jsonl" ] || skip "no ../shared/gpu"
	run -0 --separate-stderr opmodel fit -o h100.om "$K/kernels.jsonl"
	[[ "${lines[0]}" == "model of NVIDIA H100 80GB HBM3, 132 SMs:"* ]]
	# 1255 GEMM rows, those of 40 us or more kept: enough for trees
	[[ "${lines[2]}" == "gemm      trees "* ]]
	run -0 --separate-stderr opmodel check --min-us 100 h100.om "$K/kernels.jsonl"
	[[ "${lines[2]}" == "gemm "* ]]
}

@test "opmodel: SDPA rows under 5 times the fastest SDPA call, and stalled forwards, are dropped" {
	# fastest calls 30 us (forward) and 100 us (forward+backward): a row
	# needs 150 and 500 us; the last row's forward (1500 us) is as long
	# as its backward (1300 us)
	run -0 --separate-stderr opmodel fit -o m.om "$OM/sdpa.jsonl"
	[[ "${lines[3]}" == "attn_fwd  roofline       2 "* ]]
	[[ "${lines[4]}" == "attn_bwd  roofline       2 "* ]]
	[ "${lines[12]}" = "sweep timings not used: 4 host-bound (under 40 us, or SDPA under 5 times its fastest call), 0 of several operators, 0 without a positive time, 2 forwards as long as their backward" ]
	# every row but the stalls: the second row's backward (80 us) is
	# shorter than its forward (120 us)
	run -0 --separate-stderr opmodel fit --min-us 0 -o m.om "$OM/sdpa.jsonl"
	[[ "${lines[3]}" == "attn_fwd  roofline       3 "* ]]
	[ "${lines[12]}" = "sweep timings not used: 0 host-bound (under 0 us), 0 of several operators, 0 without a positive time, 4 forwards as long as their backward" ]
}

@test "opmodel: the op sweep recorded in data/gpu fits attention from its kernels' own times" {
	# data/gpu/README.md: 206 attention shapes called 3 times each, their
	# forward and backward kernels timed by the profiler
	S="$ROOT/data/gpu/h100/op_sweep.json.gz"
	run -0 --separate-stderr opmodel fit -o ops.om "$S"
	[[ "${lines[0]}" == "model of NVIDIA H100 80GB HBM3, 132 SMs:"* ]]
	[[ "${lines[3]}" == "attn_fwd  trees        618 "* ]]
	[[ "${lines[4]}" == "attn_bwd  trees        618 "* ]]
	# the model checks its own sweep's attention within a few per cent
	run -0 --separate-stderr opmodel check -q --min-us 20 ops.om "$S"
	awk '$1 ~ /^attn_/ { n++; if ($5 + 0 > 5) bad = 1 } END { exit !(n == 2 && !bad) }' <<< "$output"
}

@test "opmodel: fit reads its input as it comes: 128 MiB of whitespace before a trace, in 200 MB of memory" {
	# 128 KB of gzip; the whole input once held decompressed (its
	# buffer doubled to 256 MiB) did not fit
	if grep -q fsanitize "$ROOT/build/flags" 2>/dev/null; then
		skip "ulimit -v under a sanitizer build"
	fi
	python3 - "$OM/mm.json" <<-'PY'
	import sys, zlib
	z = zlib.compressobj(9, zlib.DEFLATED, 31)
	out = [z.compress(b" " * (1 << 20)) for _ in range(128)]
	out += [z.compress(open(sys.argv[1], "rb").read()), z.flush()]
	open("ws.json.gz", "wb").write(b"".join(out))
	PY
	opmodel fit -o plain.om "$OM/mm.json" > plain.txt
	run -0 --separate-stderr bash -c 'ulimit -v 200000; exec opmodel fit -o ws.om ws.json.gz'
	[ "$output" = "$(cat plain.txt)" ]
	cmp plain.om ws.om
	# the same through stdin, and a byte offset in a bad trace is the file's
	run -0 --separate-stderr bash -c 'ulimit -v 200000; exec opmodel fit -o ws.om - < ws.json.gz'
	cmp plain.om ws.om
	printf '\n\n   {"traceEvents": [}' > bad.json
	run -1 --separate-stderr opmodel fit -o m.om bad.json
	# the 23rd byte, the "}" after 22 (2 newlines, 3 spaces, {"traceEvents": [)
	[[ $stderr == "opmodel: bad.json: byte 23: "* ]]
}
