#!/usr/bin/env bats
# graph-scale-dp on the collective patterns real frameworks leave: one
# hand-written job per framework (tests/fixtures/frameworks/NAME.txt, its
# comment says what the framework does), made into a job section by mkfw.
# What each group is for follows from the frameworks' own design (each
# fixture's comment), not from the tool's output.

load helpers

FW="$FIX/frameworks"

# A fixture into a job section: each line `TYPE PHASE BYTES RANKS D
# [KERNEL]` becomes one collective task on every rank of RANKS (stream 7
# of that rank, one after another, 1 ms apart), of transfer time D, and
# the rank edges that join them (the first member to each other one);
# `nopgr` leaves the process-group ranks out.
mkfw() {
	awk '
	function str(s) {
		if (!(s in sid)) { sid[s] = nstr++; strs[nstr - 1] = s }
		return sid[s]
	}
	/^#/ || NF == 0 { next }
	$1 == "world" { world = $2; next }
	$1 == "nopgr" { nopgr = 1; next }
	{
		ty = $1; ph = $2; by = $3; n = split($4, r, ","); d = $5
		name = NF > 5 ? substr($0, index($0, $6)) : "ncclDevKernel_" ty
		txt = "["; for (k = 1; k <= n; k++) txt = txt (k > 1 ? ", " : "") r[k]; txt = txt "]"
		first = -1
		for (k = 1; k <= n; k++) {
			rk = r[k]; id = ntask++
			ts = (line + 1) * 1000000
			task[id] = sprintf("{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":%d,\"d\":%d,\"ts\":%d,\"it\":1,\"coll\":\"%s\",\"by\":%d,\"gs\":%d%s,\"ph\":\"%s\"}",
			    id, rk, str(name), d, ts, ty, by, n, nopgr ? "" : sprintf(",\"pgr\":%d", str(txt)), ph)
			if (rk in last) edge[nedge++] = sprintf("{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"stream\"}", last[rk], id)
			last[rk] = id
			if (first < 0) first = id
			else edge[nedge++] = sprintf("{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"rank\"}", first, id)
		}
		line++
	}
	END {
		printf "{\"r\":\"header\",\"format\":\"kgraph\",\"major\":1,\"minor\":3,\"producer\":\"t\",\"unit\":\"ns\",\"rank\":-1,\"world\":%d,\"ranks\":[", world
		for (k = 0; k < world; k++) printf "%s%d", k ? "," : "", k
		print "]}"
		for (k = 0; k < nstr; k++) printf "{\"r\":\"str\",\"id\":%d,\"s\":\"%s\"}\n", k, strs[k]
		for (k = 0; k < world; k++) printf "{\"r\":\"proc\",\"id\":%d,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":%d}\n", k, k
		for (k = 0; k < ntask; k++) print task[k]
		for (k = 0; k < nedge; k++) print edge[k]
		printf "{\"r\":\"end\",\"tasks\":%d,\"edges\":%d,\"procs\":%d,\"strs\":%d}\n", ntask, nedge, world, nstr
	}' "$FW/$1.txt" | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > "$1.kg"
}

# "ID D" of every task
durations() {
	graphcat "$1" | jq -r 'select(.r == "task") | "\(.id) \(.d)"'
}

# The ids of the tasks whose duration differs between two streams.
changed() {
	paste <(durations "$1") <(durations "$2") | awk '$2 != $4 { print $1 }' | tr '\n' ' '
}

@test "graph-scale-dp: DDP's group is data-parallel, its forward buffer broadcast notwithstanding, and all of its collectives are re-timed" {
	mkfw ddp
	run -0 --separate-stderr graph-scale-dp -v -o 8.kg 8 ddp.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: ddp.kg: section 0: group [0, 1] (2 ranks, NVLink; the trace's process-group ranks): data-parallel; kernels: allreduce bwd 6, broadcast fwd 4" ]
	[ "${stderr_lines[1]}" = "graph-scale-dp: ddp.kg: section 0: data-parallel degree 2 -> 8, tensor-parallel 1, 8 GPUs a node" ]
	# all 10 tasks (5 collectives on 2 ranks) take longer among 8
	[ "$(changed ddp.kg 8.kg)" = "0 1 2 3 4 5 6 7 8 9 " ]
	graph-scale-dp -q 2 ddp.kg > 2.kg
	[ "$(changed ddp.kg 2.kg)" = "" ]
}

@test "graph-scale-dp: FSDP's sharding group (all-gather forward and backward, reduce-scatter backward) is data-parallel" {
	mkfw fsdp
	run -0 --separate-stderr graph-scale-dp -v -o 8.kg 8 fsdp.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: fsdp.kg: section 0: group [0, 1, 2, 3] (4 ranks, NVLink; the trace's process-group ranks): data-parallel; kernels: allgather fwd 8, allgather bwd 8, reducescatter bwd 8" ]
	[ "${stderr_lines[1]}" = "graph-scale-dp: fsdp.kg: section 0: data-parallel degree 4 -> 8, tensor-parallel 1, 8 GPUs a node" ]
	[ "$(changed fsdp.kg 8.kg | wc -w)" = 24 ]
	# each now runs over 8 ranks: a sharded job's state divides by it
	# (graphstat's memory estimate)
	[ "$(graphcat 8.kg | jq -r 'select(.r == "task" and .k == "coll") | .gs' | sort -u)" = 8 ]
	# the tensor-parallel group keeps its size
	mkfw megatron
	graph-scale-dp -q -o m4.kg 4 megatron.kg
	[ "$(graphcat m4.kg | jq -r 'select(.r == "task" and .k == "coll") | .gs' | sort -u | tr '\n' ' ')" = "2 4 " ]
}

@test "graph-scale-dp: Megatron's tp 2, pp 2, dp 2: the activations' groups are tensor-parallel, the gradients' data-parallel, the pipeline's kept" {
	mkfw megatron
	run -0 --separate-stderr graph-scale-dp -v -o 4.kg 4 megatron.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: megatron.kg: section 0: group [0, 1] (2 ranks, NVLink; the trace's process-group ranks): tensor-parallel; kernels: allreduce fwd 2, allreduce bwd 2" ]
	[ "${stderr_lines[4]}" = "graph-scale-dp: megatron.kg: section 0: group [0, 4] (2 ranks, NVLink; the trace's process-group ranks): kept as it is; kernels: send fwd 2" ]
	[ "${stderr_lines[8]}" = "graph-scale-dp: megatron.kg: section 0: group [0, 2] (2 ranks, NVLink; the trace's process-group ranks): data-parallel; kernels: allreduce fwd 2, allreduce bwd 2" ]
	[ "${stderr_lines[12]}" = "graph-scale-dp: megatron.kg: section 0: data-parallel degree 2 -> 4, tensor-parallel 2, 8 GPUs a node" ]
	# the tensor-parallel all-reduces keep their times (tasks 0-7, 24-31);
	# at dp 4 stage 1 moves to ranks 8-15, node 1: the pipeline pairs
	# cross nodes and are re-timed (8-15), and so are the data-parallel
	# collectives (16-23, 32-39)
	[ "$(changed megatron.kg 4.kg)" = "$(seq 8 23 | tr '\n' ' ')$(seq 32 39 | tr '\n' ' ')" ]
}

@test "graph-scale-dp: DLRM without process-group ranks: the matched world group runs all-to-all and all-reduce, and is data-parallel" {
	mkfw dlrm
	run -0 --separate-stderr graph-scale-dp -v -o 8.kg 8 dlrm.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: dlrm.kg: section 0: group [0, 1, 2, 3] (4 ranks, NVLink; matched across the ranks): data-parallel; kernels: allreduce bwd 8, alltoall fwd 8, alltoall bwd 4" ]
	# every collective re-timed, the all-to-alls too: they grow with the ranks
	[ "$(changed dlrm.kg 8.kg | wc -w)" = 20 ]
	# the same without the rank edges: nothing tells the group
	graphcat dlrm.kg | grep -v '"k":"rank"' | sed 's/"edges":[0-9]*/"edges":16/' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > lone.kg
	run -1 --separate-stderr graph-scale-dp 8 lone.kg
	[ "$stderr" = 'graph-scale-dp: lone.kg: section 0: its collectives carry no process-group ranks (NCCL metadata, `pgr`) and were not matched across ranks: give the data-parallel group with --dp-group RANKS' ]
	# ... so the user says: ranks 0 to 3
	graph-scale-dp -q --dp-group 0-3 -o told.kg 8 lone.kg
	[ "$(changed lone.kg told.kg | wc -w)" = 20 ]
}

@test "graph-scale-dp: expert parallelism's DeepEP all-to-all is kept, the data-parallel gradients re-timed" {
	mkfw ep
	run -0 --separate-stderr graph-scale-dp -v -o 4.kg 4 ep.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: ep.kg: section 0: group [0, 1] (2 ranks, NVLink; the trace's process-group ranks): kept as it is; kernels: alltoall fwd 4, alltoall bwd 2" ]
	[ "${stderr_lines[2]}" = "graph-scale-dp: ep.kg: section 0: group [0, 2] (2 ranks, NVLink; the trace's process-group ranks): data-parallel; kernels: allreduce bwd 2" ]
	# tasks 12-15: the gradients' all-reduces
	[ "$(changed ep.kg 4.kg)" = "12 13 14 15 " ]
}
