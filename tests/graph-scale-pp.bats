#!/usr/bin/env bats
# graph-scale-pp: the checklist; the identity on tracegen's pipeline job;
# a deeper pipeline's layout, schedule and meetings, and its time against
# tracegen's own job at that depth; GPipe and more micro-batches; what
# stops it.

load helpers

USAGE='usage: graph-scale-pp [-q] [-o FILE] [--microbatches M] [--schedule 1f1b|gpipe] [--gpus-per-node N] [--net GBPS,US] [--topology FILE] [--activation-bytes B] N [FILE ...]'

# tracegen's tiny job (4 layers, tp 2, pp 2, dp 2, 4 micro-batches, 4
# GPUs a node), merged, into base.kg
mkbase() {
	tracegen --preset tiny "$@" -d base
	kineto2graph -q base/*.json.gz | graph-deps --merge > base.kg
}

job_times() { # the job rows' simulated iteration times
	graphsim "$1" | graphstat --csv | awk -F, '$1 == "job" { print $4 }'
}

# The order of rank R's steps in iteration 10: F<mb> for forward, B<mb>
# for backward, one word a run of tasks (threads only).
steps() {
	graphcat -r "$1" | jq -s -r --argjson r "$2" '
		([.[] | select(.r == "proc" and .rank == $r and .k == "thread") | .id]) as $p |
		.[] | select(.r == "task" and .it == 10 and (.p as $q | $p | index($q)) != null and
		    .mb != null and (.ph == "fwd" or .ph == "bwd")) |
		"\(if .ph == "fwd" then "F" else "B" end)\(.mb)"' | uniq | tr '\n' ' '
}

@test "graph-scale-pp: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-scale-pp --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "graph-scale-pp: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-scale-pp.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-scale-pp: a missing or bad depth, or bad options, are usage errors" {
	run -2 --separate-stderr graph-scale-pp
	[ "${stderr_lines[0]}" = "graph-scale-pp: missing the new pipeline depth" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr graph-scale-pp 0
	[ "${stderr_lines[0]}" = "graph-scale-pp: invalid pipeline depth '0'" ]
	run -2 --separate-stderr graph-scale-pp --schedule zb 4
	[ "${stderr_lines[0]}" = "graph-scale-pp: invalid --schedule 'zb' (1f1b or gpipe)" ]
	run -2 --separate-stderr graph-scale-pp --microbatches x 4
	[ "${stderr_lines[0]}" = "graph-scale-pp: invalid --microbatches 'x'" ]
	run -2 --separate-stderr graph-scale-pp --net 5 4
	[ "${stderr_lines[0]}" = "graph-scale-pp: invalid --net '5' (GBPS,US)" ]
}

@test "graph-scale-pp: --version names the tool; a failed run leaves no output file" {
	run -0 graph-scale-pp --version
	[ "$output" = "graph-scale-pp (kgraph) 0.1" ]
	kineto2graph -q "$ROOT/examples/ddp-step.json" > rank.kg
	run -1 graph-scale-pp -o out.kg 4 rank.kg
	[ ! -e out.kg ]
	run -1 --separate-stderr graph-scale-pp 4 nosuch.kg
	[ "$stderr" = "graph-scale-pp: nosuch.kg: No such file or directory" ]
}

@test "graph-scale-pp: pages faulted in on a thread or not, the same job" {
	# the input's and the new job's arrays are faulted in ahead by a
	# thread (common/prefault.h) past 64 MiB; =always starts it at once
	mkbase
	KG_PREFAULT=0 graph-scale-pp -q 4 base.kg > a.kg
	KG_PREFAULT=always graph-scale-pp -q 4 base.kg > b.kg
	cmp a.kg b.kg
	[ "$(graphcat a.kg | grep -c '"r":"task"')" -gt "$(graphcat base.kg | grep -c '"r":"task"')" ]
}

@test "graph-scale-pp: the traced depth gives the same replay, every rank and iteration" {
	mkbase
	graph-scale-pp --gpus-per-node 4 2 base.kg > same.kg
	graph-deps --check same.kg | grep -q ' 0 cycles, 0 unknown'
	# the simulated columns (a prediction leaves the measured ones empty)
	diff <(graphsim base.kg | graphstat --csv | cut -d, -f1,2,4,6-9,15) \
	    <(graphsim same.kg | graphstat --csv | cut -d, -f1,2,4,6-9,15)
	# tiny's 8 ranks in 2 stages, kept
	graphcat same.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-pp 0.1 set: pp=2, world=8"'
}

@test "graph-scale-pp: four stages: the layout, the layers, the 1F1B order, sends meeting receives" {
	mkbase
	graph-scale-pp -q --gpus-per-node 4 4 base.kg > four.kg
	graph-deps --check four.kg | grep -q ' 0 cycles, 0 unknown'
	# 2 x 2 x 4 ranks; rank t + 2 (d + 2 s) holds layer s (4 layers, one a stage)
	graphcat four.kg | head -n 1 | jq -e '.ranks == [range(16)] and .world == 16'
	run -0 sh -c "graphcat -r four.kg | jq -s -r '([.[] | select(.r == \"proc\") | {key: (.id | tostring), value: .rank}] | from_entries) as \$p |
		[.[] | select(.r == \"task\" and .ly != null) | \"\(\$p[.p | tostring]) \(.ly) \(.st)\"] | unique | .[]'"
	[ "$(echo "$output" | awk '{ if ($2 != int($1 / 4) || $3 != $2) bad = 1 } END { print NR, bad + 0 }')" = "16 0" ]
	# stage 2 of 4, 4 micro-batches: 1 warm-up forward step, then pairs,
	# then the last backward step; stage 0: 3 warm-up steps
	[ "$(steps four.kg 8)" = "F0 F1 B0 F2 B1 F3 B2 B3 " ]
	[ "$(steps four.kg 0)" = "F0 F1 F2 F3 B0 B1 B2 B3 " ]
	# each send meets one receive, on the next or the previous stage
	run -0 sh -c "graphcat -r four.kg | jq -s -r '
		([.[] | select(.r == \"proc\") | {key: (.id | tostring), value: .rank}] | from_entries) as \$p |
		([.[] | select(.r == \"task\") | {key: (.id | tostring), value: [.coll, \$p[.p | tostring], .pgr]}] | from_entries) as \$t |
		.[] | select(.r == \"edge\" and .k == \"rank\") | [\$t[.src | tostring], \$t[.dst | tostring]] |
		select(.[0][0] == \"send\" or .[0][0] == \"recv\") |
		\"\(.[0][0]) \(.[1][0]) \((.[0][1] - .[1][1]) | fabs) \(.[0][2])\"' | sort | uniq -c"
	[ "${#lines[@]}" -gt 0 ]
	echo "$output" | awk '{ if (!(($2 == "send" && $3 == "recv") || ($2 == "recv" && $3 == "send")) || $4 != 4) exit 1 }'
}

@test "graph-scale-pp: four stages predict tracegen's own 4-stage job within 3%" {
	mkbase
	tracegen --preset tiny --pp 4 -d target
	kineto2graph -q target/*.json.gz | graph-deps --merge > target.kg
	graph-scale-pp -q --gpus-per-node 4 4 base.kg > four.kg
	paste -d' ' <(job_times target.kg) <(job_times four.kg) > cmp
	cat cmp
	awk '{ e = ($2 - $1) / $1; if (e < 0) e = -e; if (e > 0.03) exit 1 }' cmp
	# and the data-parallel degree after it
	graph-scale-pp -q --gpus-per-node 4 4 base.kg | graph-scale-dp -q --gpus-per-node 4 --net 50,5 1 |
		graphsim | graphstat --csv > /dev/null
}

@test "graph-scale-pp: GPipe and more micro-batches" {
	mkbase
	graph-scale-pp -q --gpus-per-node 4 --schedule gpipe 4 base.kg > gpipe.kg
	[ "$(steps gpipe.kg 8)" = "F0 F1 F2 F3 B0 B1 B2 B3 " ]
	# 8 micro-batches, stage 0 of 2: 1 warm-up step
	graph-scale-pp -q --gpus-per-node 4 --microbatches 8 2 base.kg > eight.kg
	[ "$(steps eight.kg 0)" = "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7 " ]
	graph-deps --check eight.kg | grep -q ' 0 cycles, 0 unknown'
	tracegen --preset tiny --microbatches 8 -d target
	kineto2graph -q target/*.json.gz | graph-deps --merge > target.kg
	paste -d' ' <(job_times target.kg) <(job_times eight.kg) > cmp
	cat cmp
	awk '{ e = ($2 - $1) / $1; if (e < 0) e = -e; if (e > 0.06) exit 1 }' cmp
}

@test "graph-scale-pp: a job without a pipeline gets its sends and receives made" {
	# tiny at one stage (tp 2, dp 2) to two: each send meets a receive,
	# and the job runs within 6% of tracegen's own 2-stage job
	mkbase --pp 1
	graph-scale-pp -q --gpus-per-node 4 1 base.kg > same.kg
	# the simulated columns (a prediction leaves the measured ones empty)
	diff <(graphsim base.kg | graphstat --csv | cut -d, -f1,2,4,6-9,15) \
	    <(graphsim same.kg | graphstat --csv | cut -d, -f1,2,4,6-9,15)
	graph-scale-pp -q --gpus-per-node 4 --net 50,5 2 base.kg > two.kg
	graph-deps --check two.kg | grep -q ' 0 cycles, 0 unknown'
	[ "$(steps two.kg 0)" = "F0 F1 B0 F2 B1 F3 B2 B3 " ]
	run -0 sh -c "graphcat -r two.kg | jq -r 'select(.r == \"task\" and (.coll == \"send\" or .coll == \"recv\")) | .by' | sort -u"
	# the first layer's input, [128, 1, 256] at 2 bytes
	[ "$output" = 65536 ]
	[ "$(graphcat -r two.kg | jq -s '[.[] | select(.r == "edge" and .k == "rank")] | length')" -gt 0 ]
	tracegen --preset tiny -d target
	kineto2graph -q target/*.json.gz | graph-deps --merge > target.kg
	paste -d' ' <(job_times target.kg) <(job_times two.kg) > cmp
	cat cmp
	awk '{ e = ($2 - $1) / $1; if (e < 0) e = -e; if (e > 0.06) exit 1 }' cmp
}

@test "graph-scale-pp: one GPU's graph becomes a pipeline, one rank a stage, on the links given" {
	# tracegen's small model on one GPU (tiny's is bound by its host,
	# whose sends cost more than the one call made here: see the man page)
	tracegen --preset small --tp 1 --dp 1 --pp 1 -d one
	kineto2graph -q one/rank-0.json.gz > one.kg
	# no link given: NVLink is the built-in h100 topology's, said and
	# recorded after the degree set (one rank in 2 stages: world 2)
	run -0 --separate-stderr graph-scale-pp -o bi.kg 2 one.kg
	[ "$stderr" = "graph-scale-pp: warning: one.kg: section 0: no collective over NVLink in the job: it is taken to be the built-in h100 topology's (450 GB/s a GPU, NCCL's ring model; give it with --net or --topology)" ]
	graphcat bi.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-pp 0.1 set: pp=2, world=2 assumed NVLink: built-in h100 (450 GB/s, NCCL'"'"'s ring model)"' 
	printf 'nvlink 400 3  # a guess for H100\n' > topo
	graph-scale-pp -q --topology topo 2 one.kg > two.kg
	graphcat two.kg | head -n 1 | jq -e '.ranks == [0, 1]'
	# the first layer's input, [2048, 2, 1024] at 2 bytes
	[ "$(graphcat two.kg | jq -r 'select(.r == "task" and .coll == "send") | .by' | sort -u)" = 8388608 ]
	tracegen --preset small --tp 1 --dp 1 -d target
	kineto2graph -q target/*.json.gz | graph-deps --merge > target.kg
	paste -d' ' <(job_times target.kg) <(job_times two.kg) > cmp
	cat cmp
	awk '{ e = ($2 - $1) / $1; if (e < 0) e = -e; if (e > 0.03) exit 1 }' cmp
}

@test "graph-scale-pp: the NVLink assumed is the built-in topology of the trace's GPU: an MI300X's Infinity Fabric, else h100's, said" {
	# tracegen's H100 profile under another GPU's name (deviceProperties)
	printf 'base h100\ngpu AMD Instinct MI300X\n' > mi.hw
	tracegen --preset small --tp 1 --dp 1 --pp 1 --hw mi.hw -d mi
	kineto2graph -q mi/rank-0.json.gz > mi.kg
	[ "$(graphcat mi.kg | head -n 1 | jq -r .gpu)" = "AMD Instinct MI300X" ]
	run -0 --separate-stderr graph-scale-pp -o mi2.kg 2 mi.kg
	[ "$stderr" = "graph-scale-pp: warning: mi.kg: section 0: no collective over NVLink in the job: it is taken to be the built-in mi300x topology's (448 GB/s a GPU, NCCL's ring model; give it with --net or --topology)" ]
	graphcat mi2.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-pp 0.1 set: pp=2, world=2 assumed NVLink: built-in mi300x (448 GB/s, NCCL'"'"'s ring model)"'
	# a stage's send, 8388608 B (the first layer's input), 1 step: the
	# least of Simple's 8400 + 3400 + 8388608 / 448 = 30525 ns and LL's
	# 3600 + 470 + 8388608 / (448 / 3) = 60244 (against h100's 30441)
	[ "$(graphcat mi2.kg | jq -r 'select(.r == "task" and .coll == "send") | "\(.by) \(.d)"' | sort -u)" = "8388608 30525" ]
	# a name no built-in matches: h100's, and why
	printf 'base h100\ngpu AMD Radeon Graphics\n' > rg.hw
	tracegen --preset small --tp 1 --dp 1 --pp 1 --hw rg.hw -d rg
	kineto2graph -q rg/rank-0.json.gz > rg.kg
	run -0 --separate-stderr graph-scale-pp -o rg2.kg 2 rg.kg
	[ "$stderr" = "graph-scale-pp: warning: rg.kg: section 0: no collective over NVLink in the job: it is taken to be the built-in h100 topology's (450 GB/s a GPU, NCCL's ring model; the GPU (AMD Radeon Graphics) matches no built-in topology; give it with --net or --topology)" ]
	[ "$(graphcat rg2.kg | jq -r 'select(.r == "task" and .coll == "send") | "\(.by) \(.d)"' | sort -u)" = "8388608 30441" ]
}

@test "graph-scale-pp: one stage of a pipeline, or too few layers, stops it" {
	tracegen --preset tiny --ranks 0 -d part
	kineto2graph -q part/rank-0.json.gz > part.kg
	run -1 --separate-stderr graph-scale-pp 4 part.kg
	[ "$stderr" = "graph-scale-pp: part.kg: section 0: one stage of a pipeline: merge the job's ranks first (graph-deps --merge)" ]
	mkbase
	run -1 --separate-stderr graph-scale-pp 8 base.kg
	[ "$stderr" = "graph-scale-pp: base.kg: section 0: 4 layers cannot fill 8 pipeline stages" ]
	run -1 bash -c 'graph-scale-pp 8 base.kg | graphcat'
	run -2 --separate-stderr graph-scale-pp --activation-bytes 0 2 base.kg
	[ "${stderr_lines[0]}" = "graph-scale-pp: invalid --activation-bytes '0'" ]
}

@test "graph-scale-pp: a second micro-batch copied from a one-micro-batch trace adds the gradients the first handed over" {
	need_gpu
	kineto2graph -q "$GPU/gptB_L8_H2560.json.gz" > one.kg
	graph-scale-pp -q 1 --microbatches 2 one.kg > two.kg
	# the first micro-batch hands over one gradient a parameter tensor: a
	# GPT of 8 blocks has 12 tensors a block, the embeddings 2 and the
	# final norm 2 (the head is tied): 100 an iteration
	its=$(dump one.kg | head -1 | jq '.iters | length')
	[ "$(dump one.kg | jq -c 'select(.r == "task" and .k == "cpu" and .n == "detach" and .ph == "bwd")' | wc -l)" -eq $((100 * its)) ]
	adds() { dump two.kg | jq -r --argjson mb "$1" 'select(.r == "task" and .k == "kern" and .op == "aten::add_" and .ph == "bwd" and .mb == $mb) | .sh' | wc -l; }
	[ "$(adds 1)" -eq $(($(adds 0) + 100 * its)) ]
	# each made add: a launch call of aten::add_ on the parameter's shape,
	# its kernel timed by the elements (a 10240 x 2560 weight's add takes
	# 10240 times a 2560 bias's, within the rounding of the bias's ns)
	dump two.kg | jq -r 'select(.r == "task" and .k == "kern" and .op == "aten::add_" and .mb == 1 and (.sh == "[[10240,2560],[10240,2560],[]]" or .sh == "[[10240],[10240],[]]")) | "\(.sh) \(.d)"' | sort -u > made.txt
	awk '/\[\[10240,2560\]/ { w = $2 } /\[\[10240\]/ { b = $2 } END { r = w / b; exit !(r > 2560 * 0.99 && r < 2560 * 1.01) }' made.txt
	[ "$(dump two.kg | jq -c 'select(.r == "task" and .k == "rt" and .op == "aten::add_" and .mb == 1 and .sh == "[[2560,10240],[2560,10240],[]]") | .ty' | sort -u)" = '"[\"float\",\"float\",\"Scalar\"]"' ]
	# the first micro-batch and a one-micro-batch rebuild make none
	graph-scale-pp -q 1 one.kg > same.kg
	[ "$(dump same.kg | jq -c 'select(.r == "task" and .k == "kern" and .op == "aten::add_")' | wc -l)" -eq "$(dump one.kg | jq -c 'select(.r == "task" and .k == "kern" and .op == "aten::add_")' | wc -l)" ]
}

@test "graph-scale-pp: with no add kernel to time them on, the accumulations are left out with a warning" {
	need_gpu
	kineto2graph -q "$GPU/gpt_L4_H1024.json.gz" > one.kg
	# every add kernel made shorter than 20 us
	graph-retime --speedup 'aten::add_=1000' one.kg > fast.kg
	run -0 --separate-stderr graph-scale-pp -o two.kg 1 --microbatches 2 fast.kg
	[ "${stderr_lines[1]}" = "graph-scale-pp: warning: fast.kg: section 0: $((52 * 3)) gradient accumulations of later micro-batches left out: the job has no add kernel of 20 us or more to time them on" ]
}

@test "graph-scale-pp: a data-parallel job has pipeline depth 1; without layer tags, or with collectives that name no group, it says so" {
	# tiny, tp 1, dp 2, pp 1: no send or receive between its 2 ranks
	tracegen --preset tiny --tp 1 --pp 1 --dp 2 -d dp
	kineto2graph -q dp/*.json.gz | graph-deps --merge > dp.kg
	# its layer tags taken away: what cuts stages is missing
	graphcat dp.kg | jq -c 'del(.ly)' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > nol.kg
	run -1 --separate-stderr graph-scale-pp -q 2 nol.kg
	[ "$stderr" = 'graph-scale-pp: nol.kg: section 0: the job has pipeline depth 1 (no send or receive between ranks), and rank 0 has no task with a layer tag to cut stages by: kineto2graph found no repeated block in the forward pass; name the layers with record_function ranges ("layer_3"), record nn.Module calls (with_stack=True) or give kineto2graph --layer-ops REGEX' ]
	# its collectives' groups taken away: 2 ranks no group holds
	graphcat dp.kg | jq -c 'del(.pgr)' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > nog.kg
	run -1 --separate-stderr graph-scale-pp -q 2 nog.kg
	[ "$stderr" = 'graph-scale-pp: nog.kg: section 0: the job has pipeline depth 1 (no send or receive between ranks), but its process groups (tensor-parallel 1, data-parallel 1) do not make its 2 ranks: its collectives need their groups'"'"' ranks (NCCL metadata, `pgr`) and the job all its ranks' ]
	# as traced, it is split
	run -0 graph-scale-pp -q -o two.kg 2 dp.kg
	graphsim two.kg | graphstat | grep -q '^  configuration: 4 ranks, dp 2, tp 1, pp 2, '
}

@test "graph-scale-pp: the DLRM job (8 ranks, no pipeline, no layer tags) is depth 1 with nothing to cut stages by" {
	need_traces
	kineto2graph -q -o ranks.kg "$TRACES"/param_dlrm_8rank_v100/kineto/*
	graph-deps --merge ranks.kg > dlrm.kg 2> /dev/null
	run -1 --separate-stderr graph-scale-pp -q 2 dlrm.kg
	[[ $stderr == 'graph-scale-pp: dlrm.kg: section 0: the job has pipeline depth 1 (no send or receive between ranks), and rank 0 has no task with a layer tag to cut stages by: '* ]]
}
