#!/usr/bin/env bats
# graph-scale-hidden: the checklist; shapes and times worked out by hand
# on tests/fixtures/hidden/block.json (one GPT block: batch 5, sequence
# 8, hidden 8, 2 heads of 4, MLP 32, vocabulary 100, tokens 40; every
# kernel 1 us); identity and shapes against the real H100 traces.

load helpers

bats_require_minimum_version 1.5.0

HF="$FIX/hidden"
USAGE='usage: graph-scale-hidden [-q] [-o FILE] [--ffn F] [--heads N] [--model MODEL [--from MODEL]] [--from-hidden H] [--from-ffn F] [--from-heads N] H [FILE ...]'

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	kineto2graph -q "$HF/block.json" > block.kg
}

# "OP SHAPES D" of every kernel, in id order
kernels() {
	dump "$1" | jq -r 'select(.r == "task" and .k == "kern") | "\(.op) \(.sh) \(.d)"'
}

# the decoded stream less the header's tools entry
body() {
	dump "$1" | jq -c 'if .r == "header" then del(.tools) else . end'
}

@test "graph-scale-hidden: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-scale-hidden --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
	run -0 graph-scale-hidden --version
	[[ $output == "graph-scale-hidden (kgraph) "* ]]
}

@test "graph-scale-hidden: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-scale-hidden.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-scale-hidden: unknown options, no H and H not positive are usage errors" {
	run -2 --separate-stderr graph-scale-hidden --bogus 16 block.kg
	run -2 --separate-stderr graph-scale-hidden
	[ "${stderr_lines[0]}" = "graph-scale-hidden: missing the hidden size H" ]
	run -2 --separate-stderr graph-scale-hidden 0 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: invalid hidden size '0' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-hidden -- -16 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: invalid hidden size '-16' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-hidden 16x block.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: invalid hidden size '16x' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-hidden --ffn 0 16 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: invalid --ffn '0' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-hidden --from x.om 16 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: --from needs --model (the GPU to predict)" ]
}

@test "graph-scale-hidden: a missing file exits 1 naming it; a bad model is one line" {
	run -1 --separate-stderr graph-scale-hidden 16 nosuch.kg
	[ "$stderr" = "graph-scale-hidden: nosuch.kg: No such file or directory" ]
	run -1 --separate-stderr graph-scale-hidden --model nosuch.om 16 block.kg
	[ "$stderr" = "graph-scale-hidden: nosuch.om: No such file or directory" ]
	echo garbage > bad.om
	run -1 --separate-stderr graph-scale-hidden --model bad.om 16 block.kg
	[ "$stderr" = "graph-scale-hidden: bad.om: not an opmodel model file" ]
}

@test "graph-scale-hidden: empty, garbage and truncated streams exit 1 with the exact message" {
	run -1 --separate-stderr graph-scale-hidden 16 < /dev/null
	[ "$stderr" = "graph-scale-hidden: -: empty input, not a graph stream" ]
	echo garbage > g.kg
	run -1 --separate-stderr graph-scale-hidden 16 g.kg
	[ "$stderr" = "graph-scale-hidden: g.kg: not a graph stream (no zstd frame)" ]
	head -c 300 block.kg > cut.kg
	run -1 --separate-stderr graph-scale-hidden -o out.kg 16 cut.kg
	[ "$stderr" = "graph-scale-hidden: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
	[ ! -e out.kg ]
}

@test "graph-scale-hidden: a graph without shapes says how to record one" {
	kineto2graph -q "$HF/noshapes.json" > noshapes.kg
	run -1 --separate-stderr graph-scale-hidden -o out.kg 16 noshapes.kg
	[ "$stderr" = "graph-scale-hidden: noshapes.kg: section 0: no operator shapes (the trace was recorded without record_shapes): record with torch.profiler.profile(record_shapes=True)" ]
	[ ! -e out.kg ]
}

@test "graph-scale-hidden: a hidden size the heads do not divide is refused" {
	# the traced head size is 8 / 2 = 4: 10 is not a multiple
	run -1 --separate-stderr graph-scale-hidden 10 block.kg
	[ "$stderr" = "graph-scale-hidden: block.kg: section 0: the traced head size 4 does not divide the hidden size 10: give --heads" ]
	run -1 --separate-stderr graph-scale-hidden --heads 3 16 block.kg
	[ "$stderr" = "graph-scale-hidden: block.kg: section 0: 3 heads do not divide the hidden size 16" ]
	run -1 --separate-stderr graph-scale-hidden --from-heads 3 16 block.kg
	[ "$stderr" = "graph-scale-hidden: block.kg: section 0: --from-heads 3 does not divide the hidden size 8" ]
	# 10 with 5 heads (of 2) is fine, and the MLP keeps 4 times the hidden
	run -0 --separate-stderr graph-scale-hidden -q --heads 5 10 block.kg
	[ "$(graph-scale-hidden -q --heads 5 10 block.kg | graphcat | head -1 | jq -r '.tools[1]')" = \
		"graph-scale-hidden 0.1 set: hidden=10, ffn=40, heads=5 (from hidden 8, ffn 32, heads 2, by FLOPs and bytes)" ]
}

@test "graph-scale-hidden: the traced hidden size gives the same graph, model or not" {
	graph-scale-hidden 8 block.kg > same.kg
	diff <(body block.kg) <(body same.kg)
	[ "$(dump same.kg | head -1 | jq -r '.tools[1]')" = \
		"graph-scale-hidden 0.1 set: hidden=8, ffn=32, heads=2 (from hidden 8, ffn 32, heads 2, by FLOPs and bytes)" ]
	opmodel fit -o fix.om "$FIX/opmodel/mm.json" > /dev/null
	graph-scale-hidden -q --model fix.om 8 block.kg > same2.kg
	diff <(body block.kg) <(body same2.kg)
	# and the explicit traced sizes
	graph-scale-hidden --ffn 32 --heads 2 8 block.kg > same3.kg
	diff <(body block.kg) <(body same3.kg)
}

@test "graph-scale-hidden: shapes follow the hidden, MLP and head sizes by place and value" {
	graph-scale-hidden -q 16 block.kg > wide.kg
	# hidden 8 -> 16, MLP 32 -> 64, qkv 24 -> 48, heads 2 -> 4 (of 4);
	# the sequence (8, the old hidden size), batch, tokens (40) and
	# vocabulary (100) stay, the position table [8, 8] is [sequence, hidden]
	diff - <(kernels wide.kg | cut -d' ' -f1,2) <<'EOF'
aten::embedding [[100,16],[5,8]]
aten::add [[5,8,16],[8,16],[]]
aten::native_layer_norm [[5,8,16],[],[16],[16],[]]
aten::addmm [[48],[40,16],[16,48],[],[]]
aten::_cudnn_attention_forward [[5,4,8,4],[5,4,8,4],[5,4,8,4],[],[]]
aten::cat [[[5,8,16],[5,8,16],[5,8,16]],[]]
aten::addmm [[16],[40,16],[16,16],[],[]]
aten::addmm [[64],[40,16],[16,64],[],[]]
aten::gelu [[5,8,64],[]]
aten::addmm [[16],[40,64],[64,16],[],[]]
aten::mm [[40,16],[16,100]]
aten::nll_loss_forward [[40,100],[40],[],[],[]]
aten::_foreach_mul_ [[],[]]
EOF
	# --ffn and --heads: MLP 48, 8 heads of 2
	graph-scale-hidden -q --ffn 48 --heads 8 16 block.kg > odd.kg
	[ "$(kernels odd.kg | grep attention | cut -d' ' -f2)" = "[[5,8,8,2],[5,8,8,2],[5,8,8,2],[],[]]" ]
	[ "$(kernels odd.kg | grep gelu | cut -d' ' -f2)" = "[[5,8,48],[]]" ]
	# the runtime calls carry their operator's new shapes too
	[ "$(dump wide.kg | jq -r 'select(.r == "task" and .k == "rt" and .op == "aten::gelu") | .sh')" = "[[5,8,64],[]]" ]
}

@test "graph-scale-hidden: without a model, FLOPs for GEMMs and attention, bytes for the rest" {
	run -0 --separate-stderr graph-scale-hidden 16 block.kg
	[ "$stderr" = "graph-scale-hidden: warning: block.kg: section 0: no --model: 6 calls scaled by FLOPs, 5 by bytes" ]
	graph-scale-hidden -q 16 block.kg > wide.kg
	# GEMMs [40,8]x[8,X]: 2 40 8 X -> 2 40 16 2X, 4 times (the LM head's
	# vocabulary stays: twice); attention: twice the heads, twice; the
	# add, the norm, gelu and the cat of three [5,8,8] (a tensor list: its
	# elements) move twice the bytes; the loss stays; the
	# optimizer follows the parameters (below); the embedding's table
	# doubles but not its indices (not checked)
	kernels wide.kg | grep -v embedding | cut -d' ' -f1,3 > d.txt
	diff - d.txt <<'EOF'
aten::add 2000
aten::native_layer_norm 2000
aten::addmm 4000
aten::_cudnn_attention_forward 2000
aten::cat 2000
aten::addmm 4000
aten::addmm 4000
aten::gelu 2000
aten::addmm 4000
aten::mm 2000
aten::nll_loss_forward 1000
aten::_foreach_mul_ 2928
EOF
}

@test "graph-scale-hidden: the optimizer's kernels follow the parameter count" {
	# parameters at 8: table 100x8 = 800 (the LM head tied to it), norm
	# 8 + 8, qkv 8x24 + 24 = 216, projection 8x8 + 8 = 72, fc1 8x32 + 32
	# = 288, fc2 32x8 + 8 = 264: 1656. At 16: 1600 + 32 + 816 + 272 +
	# 1088 + 1040 = 4848. 1000 ns x 4848 / 1656 = 2927.5 -> 2928
	graph-scale-hidden -q 16 block.kg > wide.kg
	[ "$(kernels wide.kg | grep foreach | cut -d' ' -f3)" = 2928 ]
	# narrower: at 4 (1 head of 4, MLP 16): 400 + 8 + (4x12 + 12) + (16 + 4)
	# + (4x16 + 16) + (16x4 + 4) = 400 + 8 + 60 + 20 + 80 + 68 = 636:
	# 1000 x 636 / 1656 = 384.06 -> 384
	graph-scale-hidden -q 4 block.kg > narrow.kg
	[ "$(kernels narrow.kg | grep foreach | cut -d' ' -f3)" = 384 ]
}

@test "graph-scale-hidden: host tasks keep their times" {
	graph-scale-hidden -q 16 block.kg > wide.kg
	diff <(dump block.kg | jq -c 'select(.r == "task" and .k != "kern") | del(.sh)') \
		<(dump wide.kg | jq -c 'select(.r == "task" and .k != "kern") | del(.sh)')
}

@test "graph-scale-hidden: composes with graphsim and graphstat in a pipe" {
	graph-scale-hidden -q 16 block.kg | graphsim | graphstat --csv > wide.csv
	graph-scale-hidden -q 4 block.kg | graphsim | graphstat --csv > narrow.csv
	# one iteration; the prediction leaves the measured time empty; the
	# wider model's iteration is not shorter than the narrower one's
	[ "$(wc -l < wide.csv)" -eq 2 ]
	[ -z "$(tail -1 wide.csv | cut -d, -f3)" ]
	[ "$(tail -1 wide.csv | cut -d, -f4)" -ge "$(tail -1 narrow.csv | cut -d, -f4)" ]
}

@test "graph-scale-hidden: a write error exits 1; | head prints nothing on stderr" {
	run -1 --separate-stderr bash -c 'graph-scale-hidden -q 16 block.kg > /dev/full'
	[ "$stderr" = "graph-scale-hidden: stdout: write error: No space left on device" ]
	run -0 --separate-stderr bash -c 'graph-scale-hidden -q 16 block.kg | graphcat | head -1'
	[ -z "$stderr" ]
}

@test "graph-scale-hidden: stdin gives the same as the file operand" {
	graph-scale-hidden -q 16 block.kg > a.kg
	graph-scale-hidden -q 16 < block.kg > b.kg
	diff <(dump a.kg) <(dump b.kg)
}

@test "graph-scale-hidden: H100 traces: identity exact, and the shapes of the traced wider model" {
	need_gpu
	kineto2graph -q -o b.kg "$GPU/gptB_L8_H2560.json.gz"
	kineto2graph -q -o t.kg "$GPU/gptB_L8_H3072.json.gz"
	graph-scale-hidden -q 2560 b.kg > same.kg
	diff <(body b.kg) <(body same.kg)
	# every (operator, shapes) of the kernels predicted for hidden 3072
	# is one that the trace of hidden 3072 holds, and the other way round
	graph-scale-hidden -q 3072 b.kg > p.kg
	shapes() {
		dump "$1" | jq -r 'select(.r == "task" and .k == "kern") | "\(.op) \(.sh)"' | sort -u
	}
	diff <(shapes p.kg) <(shapes t.kg)
	[ "$(dump p.kg | head -1 | jq -r '.tools[1]')" = \
		"graph-scale-hidden 0.1 set: hidden=3072, ffn=12288, heads=24 (from hidden 2560, ffn 10240, heads 20, by FLOPs and bytes)" ]
	# a model of another GPU than the one the header names is a warning
	opmodel fit -o fix.om "$FIX/opmodel/mm.json" > /dev/null
	run -0 --separate-stderr graph-scale-hidden --model fix.om -o w.kg 3072 b.kg
	[ "${stderr_lines[0]}" = "graph-scale-hidden: warning: b.kg: section 0: a graph of NVIDIA H100 80GB HBM3 scaled by the ratios of a model of Test GPU (give --from with a model of NVIDIA H100 80GB HBM3 to predict it on the other GPU)" ]
}

@test "graph-scale-hidden: --from with the same model as --model changes nothing more" {
	opmodel fit -o fix.om "$FIX/opmodel/mm.json" > /dev/null
	graph-scale-hidden -q --model fix.om 16 block.kg > a.kg
	graph-scale-hidden -q --model fix.om --from fix.om 16 block.kg > b.kg
	diff <(body a.kg) <(body b.kg)
}

@test "graph-scale-hidden: a tensor-parallel job's shares and collectives (tracegen)" {
	# tracegen's tiny job: hidden 256, MLP 1024, 4 heads of 64, tp 2
	# (each rank 2 heads, 512 MLP and 384 qkv columns), tokens 128
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > tiny.kg
	graph-scale-hidden -q 512 tiny.kg > wide.kg
	[ "$(dump wide.kg | head -1 | jq -r '.tools[2]')" = \
		"graph-scale-hidden 0.1 set: hidden=512, ffn=2048, heads=8 (from hidden 256, ffn 1024, heads 4, tensor-parallel shares, by FLOPs and bytes)" ]
	shapes() {
		dump "$1" | jq -r 'select(.r == "task" and .k == "kern" and .op == "aten::mm") | .sh' | sort -u
	}
	# qkv [128,256]x[256,384] -> [128,512]x[512,768]; fc1's 512 -> 1024;
	# the projection's inner 128 (256 / 2, equal to the tokens) -> 256
	shapes wide.kg > got
	grep -qx '\[\[128,512\],\[512,768\]\]' got
	grep -qx '\[\[128,512\],\[512,1024\]\]' got
	grep -qx '\[\[128,256\],\[256,512\]\]' got
	[ "$(dump wide.kg | jq -r 'select(.r == "task" and .op == "aten::_flash_attention_forward") | .sh' | sort -u)" = \
		"[[1,128,4,64],[1,128,4,64],[1,128,4,64],[],[],[],[],[],[],[],[]]" ]
	# the tensor-parallel all-reduces and the pipeline's sends move
	# [128,1,256] bf16 activations: 65536 bytes, twice as many; the
	# gradients' all-reduce grows with the parameters, between 2 and 4
	# times (matrices 4 times, the rest twice)
	colls() {
		dump "$1" | jq -r 'select(.r == "task" and .k == "coll") | "\(.by) \(.d)"'
	}
	paste -d' ' <(colls tiny.kg) <(colls wide.kg) > c.txt
	awk '$1 == 65536 && $3 != 131072 { exit 1 }' c.txt
	awk '$1 > 1000000 { n++; if (!($3 > 2 * $1 && $3 < 4 * $1 && $4 > $2)) exit 1 } END { exit n == 0 }' c.txt
	# scalars stay
	awk '$1 <= 1024 && ($3 != $1 || $4 != $2) { exit 1 }' c.txt
	# the identity is exact here too
	graph-scale-hidden -q 256 tiny.kg > same.kg
	diff <(body tiny.kg) <(body same.kg)
	# a new head count the degree does not divide
	run -1 --separate-stderr graph-scale-hidden -q --heads 5 320 tiny.kg
	[ "$stderr" = "graph-scale-hidden: tiny.kg: section 0: the tensor-parallel degree 2 does not divide the new heads (5)" ]
}

@test "graph-scale-hidden: a size the graph does not tell is asked for, and --from-* give it" {
	kineto2graph -q "$HF/nogelu.json" > nogelu.kg
	run -1 --separate-stderr graph-scale-hidden 16 nogelu.kg
	[ "$stderr" = "graph-scale-hidden: nogelu.kg: section 0: cannot find the MLP size: no activation (gelu, silu, relu) with shapes (give --from-ffn)" ]
	# given, fc1 and fc2 follow it as in block.json: [8,32] -> [16,64]
	graph-scale-hidden -q --from-ffn 32 16 nogelu.kg > wide.kg
	[ "$(kernels wide.kg | grep -c '\[\[64\],\[40,16\],\[16,64\],\[\],\[\]\]')" -eq 1 ]
	[ "$(dump wide.kg | head -1 | jq -r '.tools[1]')" = \
		"graph-scale-hidden 0.1 set: hidden=16, ffn=64, heads=4 (from hidden 8, ffn 32, heads 2, by FLOPs and bytes)" ]
}

@test "graph-scale-hidden: a collective the job has no fit for is re-timed by the built-in topology of the GPU the header names, else h100's, said" {
	# the block and a gradient all-reduce of 4096 B between 2 ranks, of
	# no process group: no sample fits its class
	for g in "Test GPU" "AMD Instinct MI300X"; do
		graphcat block.kg | jq -c --arg g "$g" 'if .r == "header" then .gpu = $g elif .r == "end" then .tasks += 1 else . end' |
		    awk '/"r":"end"/ { print "{\"r\":\"task\",\"id\":26,\"p\":1,\"k\":\"coll\",\"n\":27,\"d\":10000,\"ts\":320000,\"it\":1,\"coll\":\"allreduce\",\"by\":4096,\"gs\":2,\"ph\":\"bwd\"}" } { print }' |
		    "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > "$g.kg"
	done
	run -0 --separate-stderr graph-scale-hidden -o h.kg 16 "Test GPU.kg"
	[ "${stderr_lines[1]}" = "graph-scale-hidden: warning: Test GPU.kg: section 0: 1 collectives re-timed by the built-in h100 topology (the job has none of their kind on that link; the GPU (Test GPU) matches no built-in topology)" ]
	run -0 --separate-stderr graph-scale-hidden -o mi.kg 16 "AMD Instinct MI300X.kg"
	[ "${stderr_lines[1]}" = "graph-scale-hidden: warning: AMD Instinct MI300X.kg: section 0: 1 collectives re-timed by the built-in mi300x topology (the job has none of their kind on that link)" ]
	# its bytes follow the parameters (4096 -> 11991 B); 2 steps, factor
	# 1, NCCL's LL the least (3600 + 2 * 470 ns, a quarter of the
	# bandwidth), each time to the ns: h100 (112.5 GB/s) 4576 -> 4647,
	# 10000 * 4647 / 4576 = 10155; mi300x (112 GB/s) 4577 -> 4647, 10153
	[ "$(dump h.kg | jq -r 'select(.r == "task" and .k == "coll") | "\(.by) \(.d)"')" = "11991 10155" ]
	[ "$(dump mi.kg | jq -r 'select(.r == "task" and .k == "coll") | "\(.by) \(.d)"')" = "11991 10153" ]
}

@test "graph-scale-hidden: a model without attention is refused, naming what is missing, whatever sizes are given" {
	# the block with its attention renamed out of the kinds known
	sed 's/_cudnn_attention/_cudnn_attn/g' "$HF/block.json" > noattn.json
	kineto2graph -q noattn.json > noattn.kg
	run -1 --separate-stderr graph-scale-hidden -o out.kg 16 noattn.kg
	[ "$stderr" = "graph-scale-hidden: noattn.kg: section 0: not a transformer's structure: no attention call with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" ]
	run -1 --separate-stderr graph-scale-hidden -o out.kg --from-hidden 8 --from-heads 2 --from-ffn 32 16 noattn.kg
	[ "$stderr" = "graph-scale-hidden: noattn.kg: section 0: not a transformer's structure: no attention call with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" ]
	[ ! -e out.kg ]
	# and without its norm too: both named
	sed 's/native_layer_norm/native_lnorm/g' noattn.json > neither.json
	kineto2graph -q neither.json > neither.kg
	run -1 --separate-stderr graph-scale-hidden 16 neither.kg
	[ "$stderr" = "graph-scale-hidden: neither.kg: section 0: not a transformer's structure: no layer norm (layer_norm, rms_norm) with shapes, no attention call with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" ]
}

@test "graph-scale-hidden: the DLRM job's rank and the 128-rank recommendation job's are refused as no transformer" {
	need_traces
	kineto2graph -q -o dlrm.kg "$TRACES"/param_dlrm_8rank_v100/kineto/worker0_*.json*
	run -1 --separate-stderr graph-scale-hidden 2048 dlrm.kg
	[ "$stderr" = "graph-scale-hidden: dlrm.kg: section 0: not a transformer's structure: no layer norm (layer_norm, rms_norm) with shapes, no attention call with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" ]
	# its norms of 125 and 160 told it to give --from-hidden; now the missing attention
	kineto2graph -q -o rec.kg "$TRACES"/hta_sampled_128rank_2ranks/*rank-0*.json*
	run -1 --separate-stderr graph-scale-hidden --from-hidden 125 2048 rec.kg
	[ "$stderr" = "graph-scale-hidden: rec.kg: section 0: not a transformer's structure: no attention call with shapes (flash, memory-efficient, cuDNN or scaled_dot_product)" ]
}
