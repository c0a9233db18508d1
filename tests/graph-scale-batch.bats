#!/usr/bin/env bats
# graph-scale-batch: shapes and times worked out by hand on
# tests/fixtures/hidden/block.json (one GPT block: batch 5, sequence 8
# equal to the hidden size 8, 2 heads of 4, MLP 32, vocabulary 100,
# tokens 40; every kernel 1 us); the refusals; tracegen's
# tensor-parallel job's collectives; the shapes of the H100 traces at
# another micro-batch size and sequence length.

load helpers

bats_require_minimum_version 1.5.0

HF="$FIX/hidden"
USAGE='usage: graph-scale-batch [-q] [-o FILE] [--seq S] [--mbs B] [--model MODEL [--from MODEL]] [--base-seq S] [--base-mbs B] [FILE ...]'

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

@test "graph-scale-batch: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-scale-batch --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
	run -0 graph-scale-batch --version
	[[ $output == "graph-scale-batch (kgraph) "* ]]
}

@test "graph-scale-batch: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-scale-batch.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-scale-batch: no size, a size of 0 and unknown options are usage errors" {
	run -2 --separate-stderr graph-scale-batch block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: give the new sequence length (--seq), micro-batch size (--mbs) or both" ]
	run -2 --separate-stderr graph-scale-batch --mbs 0 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: invalid micro-batch size --mbs '0' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-batch --seq -8 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: invalid sequence length --seq '-8' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-batch --seq 8x block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: invalid sequence length --seq '8x' (a positive integer)" ]
	run -2 --separate-stderr graph-scale-batch --bogus --seq 8 block.kg
	run -2 --separate-stderr graph-scale-batch --from x.om --seq 16 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: --from needs --model (the GPU to predict)" ]
}

@test "graph-scale-batch: a missing file, a bad model, garbage and truncated streams exit 1 with one line" {
	run -1 --separate-stderr graph-scale-batch --seq 16 nosuch.kg
	[ "$stderr" = "graph-scale-batch: nosuch.kg: No such file or directory" ]
	echo garbage > bad.om
	run -1 --separate-stderr graph-scale-batch --model bad.om --seq 16 block.kg
	[ "$stderr" = "graph-scale-batch: bad.om: not an opmodel model file" ]
	run -1 --separate-stderr graph-scale-batch --seq 16 < /dev/null
	[ "$stderr" = "graph-scale-batch: -: empty input, not a graph stream" ]
	head -c 300 block.kg > cut.kg
	run -1 --separate-stderr graph-scale-batch -o out.kg --seq 16 cut.kg
	[ "$stderr" = "graph-scale-batch: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
	[ ! -e out.kg ]
}

@test "graph-scale-batch: a graph without shapes says what to record" {
	kineto2graph -q "$HF/noshapes.json" > noshapes.kg
	run -1 --separate-stderr graph-scale-batch -o out.kg --mbs 2 noshapes.kg
	[ "$stderr" = "graph-scale-batch: noshapes.kg: section 0: no operator shapes (the trace was recorded without record_shapes): record with torch.profiler.profile(record_shapes=True)" ]
	[ ! -e out.kg ]
}

@test "graph-scale-batch: the traced sizes give the same graph" {
	graph-scale-batch --seq 8 --mbs 5 block.kg > same.kg
	diff <(body block.kg) <(body same.kg)
	[ "$(dump same.kg | head -1 | jq -r '.tools[1]')" = \
		"graph-scale-batch 0.1 set: seq=8, mbs=5 (from seq 8, mbs 5, by FLOPs and bytes)" ]
}

@test "graph-scale-batch: shapes follow the batch, the sequence and the tokens by place" {
	graph-scale-batch -q --mbs 10 --seq 16 block.kg > bs.kg
	# batch 5 -> 10, sequence 8 -> 16, tokens 40 -> 160; the hidden size
	# (8, the old sequence) in [batch, sequence, hidden]'s last place, the
	# table's rows (100) and every weight stay; the position rows added
	# ([sequence, hidden] beside [batch, sequence, hidden]) follow the
	# sequence; attention's [batch, heads, sequence, head]
	diff - <(kernels bs.kg | cut -d' ' -f1,2) <<'EOF2'
aten::embedding [[100,8],[10,16]]
aten::add [[10,16,8],[16,8],[]]
aten::native_layer_norm [[10,16,8],[],[8],[8],[]]
aten::addmm [[24],[160,8],[8,24],[],[]]
aten::_cudnn_attention_forward [[10,2,16,4],[10,2,16,4],[10,2,16,4],[],[]]
aten::cat [[[10,16,8],[10,16,8],[10,16,8]],[]]
aten::addmm [[8],[160,8],[8,8],[],[]]
aten::addmm [[32],[160,8],[8,32],[],[]]
aten::gelu [[10,16,32],[]]
aten::addmm [[8],[160,32],[32,8],[],[]]
aten::mm [[160,8],[8,100]]
aten::nll_loss_forward [[160,100],[160],[],[],[]]
aten::_foreach_mul_ [[],[]]
EOF2
	# the runtime calls carry their operator's new shapes too
	[ "$(dump bs.kg | jq -r 'select(.r == "task" and .k == "rt" and .op == "aten::gelu") | .sh')" = "[[10,16,32],[]]" ]
}

@test "graph-scale-batch: without a model, FLOPs for GEMMs and attention, bytes for the rest; the optimizer stays" {
	run -0 --separate-stderr graph-scale-batch --mbs 10 --seq 16 block.kg
	[ "${stderr_lines[0]}" = "graph-scale-batch: warning: block.kg: section 0: 0 calls re-timed by the op model, 6 by FLOPs, 6 by bytes (no --model)" ]
	graph-scale-batch -q --mbs 10 --seq 16 block.kg > bs.kg
	# GEMMs: 4 times the tokens, 4 times the FLOPs: 4000 ns. Attention:
	# batch times sequence squared, 2 x 2 x 2 = 8: 8000. The norm, cat,
	# gelu and the loss: every tensor 4 times, 4000. The add of [5,8,8]
	# and [8,8] (2 bytes an element: both read, the larger written):
	# (2560 + 256 + 2560) / (640 + 128 + 640) = 5376 / 1408 = 3.818 ->
	# 3818. The embedding: the table [100,8] read, its indices, and an
	# output as large as its largest operand (the table: opmodel's bytes
	# of an elementwise call): (1600 + 320 + 1600) / (1600 + 80 + 1600)
	# = 1.0732 -> 1073. The optimizer: the parameters do not change.
	diff - <(kernels bs.kg | cut -d' ' -f1,3) <<'EOF2'
aten::embedding 1073
aten::add 3818
aten::native_layer_norm 4000
aten::addmm 4000
aten::_cudnn_attention_forward 8000
aten::cat 4000
aten::addmm 4000
aten::addmm 4000
aten::gelu 4000
aten::addmm 4000
aten::mm 4000
aten::nll_loss_forward 4000
aten::_foreach_mul_ 1000
EOF2
	# the micro-batch alone: twice the tokens, attention twice (2000);
	# the add (1280 + 128 + 1280) / 1408 = 1.909 -> 1909; the embedding
	# (1600 + 160 + 1600) / 3280 = 1.0244 -> 1024
	graph-scale-batch -q --mbs 10 block.kg > b.kg
	[ "$(kernels b.kg | cut -d' ' -f3 | paste -sd' ')" = "1024 1909 2000 2000 2000 2000 2000 2000 2000 2000 2000 2000 1000" ]
	# the sequence alone at half the batch: the tokens stay (5 x 8 = 40
	# = 2 x 20... here 4 x 10 = 40): GEMMs keep their times, attention
	# grows as the sequence, 4 x 10^2 / (5 x 8^2) = 400 / 320 -> 1250
	graph-scale-batch -q --mbs 4 --seq 10 block.kg > s.kg
	[ "$(kernels s.kg | grep -c '^aten::addmm .* 1000$')" -eq 4 ]
	[ "$(kernels s.kg | grep attention | cut -d' ' -f3)" = 1250 ]
}

@test "graph-scale-batch: host tasks keep their times and order" {
	graph-scale-batch -q --mbs 10 --seq 16 block.kg > bs.kg
	diff <(dump block.kg | jq -c 'select(.r == "task" and .k != "kern") | del(.sh)') \
		<(dump bs.kg | jq -c 'select(.r == "task" and .k != "kern") | del(.sh)')
}

@test "graph-scale-batch: a graph that does not tell its batch and sequence asks for them" {
	# the norm on [tokens, hidden] and attention unfused on [batch x
	# heads, sequence, head]: nothing states the batch apart
	graphcat block.kg | jq -c 'if .r == "str" and .s == "[[5,8,8],[],[8],[8],[]]" then .s = "[[40,8],[],[8],[8],[]]"
	    elif .r == "str" and .s == "[[5,2,8,4],[5,2,8,4],[5,2,8,4],[],[]]" then .s = "[[10,8,4],[10,8,4],[10,8,4],[],[]]" else . end' |
	    "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > tok.kg
	run -1 --separate-stderr graph-scale-batch --mbs 10 tok.kg
	[ "$stderr" = "graph-scale-batch: tok.kg: section 0: cannot find the traced micro-batch size and sequence: no attention or layer norm with a [batch, sequence, hidden] input (give --base-mbs and --base-seq)" ]
	run -1 --separate-stderr graph-scale-batch --base-mbs 5 --mbs 10 tok.kg
	[ "$stderr" = "graph-scale-batch: tok.kg: section 0: cannot find the traced sequence length: no attention or layer norm with a [batch, sequence, hidden] input (give --base-seq)" ]
	graph-scale-batch -q --base-mbs 5 --base-seq 8 --mbs 10 tok.kg > t.kg
	# given, the tokens follow: [40,8] -> [80,8] in the norm, the three
	# addmm and the LM head's mm; [batch x heads, ...] is not read where
	# no attention tells the heads: it stays
	[ "$(kernels t.kg | grep -c '\[80,8\]')" -eq 5 ]
	[ "$(kernels t.kg | grep attention)" = "aten::_cudnn_attention_forward [[10,8,4],[10,8,4],[10,8,4],[],[]] 1000" ]
}

@test "graph-scale-batch: a tensor-parallel job's sequence must divide among its ranks; its activation collectives follow the tokens, its gradients' stay (tracegen)" {
	# tracegen's tiny job: sequence 128, micro-batch 1, tp 2
	tracegen --preset tiny --jobs 1 -d job
	kineto2graph job/*.json.gz | graph-deps --merge > tiny.kg
	run -1 --separate-stderr graph-scale-batch -q --seq 129 tiny.kg
	[ "$stderr" = "graph-scale-batch: tiny.kg: section 0: the sequence 129 does not divide among the 2 tensor-parallel ranks" ]
	graph-scale-batch -q --mbs 2 tiny.kg > b2.kg
	[ "$(dump b2.kg | head -1 | jq -r '.tools[2]')" = \
		"graph-scale-batch 0.1 set: seq=128, mbs=2 (from seq 128, mbs 1, tensor-parallel shares, by FLOPs and bytes)" ]
	colls() {
		dump "$1" | jq -r 'select(.r == "task" and .k == "coll") | "\(.by) \(.d)"'
	}
	# [128,1,256] bf16 activations, 65536 bytes: twice as many, and the
	# all-reduces take longer; gradients (over 1 MB) and scalars stay
	paste -d' ' <(colls tiny.kg) <(colls b2.kg) > c.txt
	awk '$1 == 65536 && $3 != 131072 { exit 1 }' c.txt
	awk '$1 > 1000000 { n++; if ($3 != $1 || $4 != $2) exit 1 } END { exit n == 0 }' c.txt
	awk '$1 <= 1024 && ($3 != $1 || $4 != $2) { exit 1 }' c.txt
	[ "$(dump b2.kg | jq -r 'select(.r == "task" and .k == "coll" and .coll == "allreduce" and .by == 131072) | .d' | head -1)" -gt \
	  "$(dump tiny.kg | jq -r 'select(.r == "task" and .k == "coll" and .coll == "allreduce" and .by == 65536) | .d' | head -1)" ]
}

@test "graph-scale-batch: composes with graphsim and graphstat in a pipe; stdin as the file" {
	graph-scale-batch -q --mbs 10 block.kg | graphsim | graphstat --csv > b.csv
	[ "$(wc -l < b.csv)" -eq 2 ]
	[ -z "$(tail -1 b.csv | cut -d, -f3)" ]
	graph-scale-batch -q --mbs 10 block.kg > a.kg
	graph-scale-batch -q --mbs 10 < block.kg > c.kg
	diff <(dump a.kg) <(dump c.kg)
	run -1 --separate-stderr bash -c 'graph-scale-batch -q --mbs 10 block.kg > /dev/full'
	[ "$stderr" = "graph-scale-batch: stdout: write error: No space left on device" ]
}

@test "graph-scale-batch: H100 traces: the shapes of the traced micro-batch 4 and sequence 2048" {
	need_gpu
	kineto2graph -q -o b.kg "$GPU/gpt_L8_H1024.json.gz"
	kineto2graph -q -o b4.kg "$GPU/gpt_L8_H1024_B4.json.gz"
	kineto2graph -q -o s.kg "$GPU/gpt_L8_H1024_S2048.json.gz"
	shapes() {
		dump "$1" | jq -r 'select(.r == "task" and (.k == "kern" or .k == "rt")) | "\(.op) \(.sh)"' | sort -u
	}
	# micro-batch 8 -> 4: every kernel's and launch's (operator, shapes)
	# is one the trace at 4 holds, and the other way round
	graph-scale-batch -q --mbs 4 b.kg > p4.kg
	diff <(shapes p4.kg) <(shapes b4.kg)
	# and back, 4 -> 8: at micro-batch 4 the tokens (4096) equal the MLP
	# size, and fc1's weight gradient [4096,4096]x[4096,1024] reads as
	# its data gradient (the same shapes): both become [8192,4096]x
	# [4096,1024], where the weight gradient is [4096,8192]x[8192,1024]
	# (the same FLOPs)
	graph-scale-batch -q --mbs 8 b4.kg > p8.kg
	diff <(shapes p8.kg) <(shapes b.kg) > d8.txt || true
	diff - d8.txt <<'EOF2'
47a48
> aten::mm [[4096,8192],[8192,1024]]
EOF2
	# sequence 1024 -> 2048 at micro-batch 4: all but the position
	# table's, whose rows (the parameters) stay 1024 where the traced
	# job's table has 2048
	graph-scale-batch -q --seq 2048 --mbs 4 b.kg > ps.kg
	diff <(shapes ps.kg) <(shapes s.kg) > d.txt || true
	diff - d.txt <<'EOF2'
37c37
< aten::fill_ [[1024,1024],[]]
---
> aten::fill_ [[2048,1024],[]]
41c41
< aten::gather [[1024,1024],[],[2048,1024],[],[2048,1024]]
---
> aten::gather [[2048,1024],[],[2048,1024],[],[2048,1024]]
EOF2
}
