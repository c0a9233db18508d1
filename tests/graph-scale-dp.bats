#!/usr/bin/env bats
# graph-scale-dp: the checklist; the data-parallel group found and
# re-timed by hand-worked numbers; the identity; N = 1; what stops it.

load helpers

bats_require_minimum_version 1.5.0

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

USAGE='usage: graph-scale-dp [-qv] [-o FILE] [--dp-group RANKS] [--gpus-per-node N] [--net GBPS,US] [--topology NAME|FILE] N [FILE ...]'

# A job of 4 ranks, tp 2 (groups [0, 1] and [2, 3], forward all-reduces
# of 4096 bytes) and dp 2 (groups [0, 2] and [1, 3], backward
# all-reduces of gradients, 100000 and 1000000 bytes, and a forward
# scalar of 4 bytes, a loss average). Every all-reduce runs on a stream
# of its rank; rank edges join each collective's two kernels. Transfer
# times from alpha 1000 ns a step and beta 10 bytes/ns over 2 ranks (2
# steps, factor 1): 4096 -> 2410, 100000 -> 12000, 1000000 -> 102000,
# 4 -> 2000 (rounded down).
mkjob() {
	awk -v ph_tp="${1:-fwd}" 'BEGIN {
		print "{\"r\":\"header\",\"format\":\"kgraph\",\"major\":1,\"minor\":2,\"producer\":\"t\",\"unit\":\"ns\",\"rank\":-1,\"world\":4,\"ranks\":[0,1,2,3]}"
		print "{\"r\":\"str\",\"id\":0,\"s\":\"nccl\"}"
		print "{\"r\":\"str\",\"id\":1,\"s\":\"[0, 1]\"}"
		print "{\"r\":\"str\",\"id\":2,\"s\":\"[2, 3]\"}"
		print "{\"r\":\"str\",\"id\":3,\"s\":\"[0, 2]\"}"
		print "{\"r\":\"str\",\"id\":4,\"s\":\"[1, 3]\"}"
		for (r = 0; r < 4; r++)
			printf "{\"r\":\"proc\",\"id\":%d,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":%d}\n", r, r
		n = 0
		# per rank: tp forward (4096), dp forward scalar (4), dp backward (100000, 1000000)
		for (r = 0; r < 4; r++) {
			tp = r < 2 ? 1 : 2
			dp = r % 2 == 0 ? 3 : 4
			task(n++, r, 2410, 4096, tp, ph_tp, 0)
			task(n++, r, 2000, 4, dp, "fwd", 10000)
			task(n++, r, 12000, 100000, dp, "bwd", 20000)
			task(n++, r, 102000, 1000000, dp, "bwd", 40000)
		}
		# stream order, and the rank edges: tp pairs (0,1) (2,3); dp pairs (0,2) (1,3)
		for (r = 0; r < 4; r++)
			for (k = 0; k < 3; k++)
				printf "{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"stream\"}\n", 4 * r + k, 4 * r + k + 1
		printf "{\"r\":\"edge\",\"src\":0,\"dst\":4,\"k\":\"rank\"}\n"
		printf "{\"r\":\"edge\",\"src\":8,\"dst\":12,\"k\":\"rank\"}\n"
		for (k = 1; k < 4; k++) {
			printf "{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"rank\"}\n", k, 8 + k
			printf "{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"rank\"}\n", 4 + k, 12 + k
		}
		printf "{\"r\":\"end\",\"tasks\":16,\"edges\":20,\"procs\":4,\"strs\":5}\n"
	}
	function task(id, r, d, by, pgr, ph, ts) {
		printf "{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":0,\"d\":%d,\"ts\":%d,\"it\":1,\"coll\":\"allreduce\",\"by\":%d,\"pgr\":%d,\"ph\":\"%s\"}\n", id, r, d, ts, by, pgr, ph
	}' | mkstream
}

# "ID D" of every task
durations() {
	graphcat "$1" | jq -r 'select(.r == "task") | "\(.id) \(.d)"'
}

@test "graph-scale-dp: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graph-scale-dp --help
	[ "${lines[0]}" = "$USAGE" ]
	[ -z "$stderr" ]
}

@test "graph-scale-dp: the usage line is the man page's SYNOPSIS" {
	command -v mandoc > /dev/null || skip "no mandoc"
	synopsis=$(mandoc -T ascii "$ROOT/doc/graph-scale-dp.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	[ "usage: $synopsis" = "$USAGE" ]
}

@test "graph-scale-dp: a missing or bad degree, or bad options, are usage errors" {
	run -2 --separate-stderr graph-scale-dp
	[ "${stderr_lines[0]}" = "graph-scale-dp: missing the new data-parallel degree" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 --separate-stderr graph-scale-dp 0
	[ "${stderr_lines[0]}" = "graph-scale-dp: invalid data-parallel degree '0'" ]
	run -2 --separate-stderr graph-scale-dp --net 50 4
	[ "${stderr_lines[0]}" = "graph-scale-dp: invalid --net '50' (GBPS,US)" ]
	run -2 --separate-stderr graph-scale-dp --gpus-per-node x 4
	[ "${stderr_lines[0]}" = "graph-scale-dp: invalid --gpus-per-node 'x'" ]
}

@test "graph-scale-dp: the same degree changes nothing but the header's tools" {
	mkjob > job.kg
	graph-scale-dp 2 job.kg > same.kg
	diff <(durations job.kg) <(durations same.kg)
	# dp 2 of world 4 (mkjob): dp 2, world 4 / 2 * 2
	graphcat same.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-dp 0.1 set: dp=2, world=4"'
}

@test "graph-scale-dp: the data-parallel group's collectives are re-timed, the tensor-parallel ones are not" {
	# The model fitted on the job recovers 1000 ns a step, 10 B/ns. Its
	# transfers are all among 2 ranks (2 steps), so their 2000 ns of
	# latency is split as NCCL's Simple ring splits it: 2000 * 8.4 /
	# 15.2 = 1105.26 ns fixed, 2000 * 3.4 / 15.2 = 447.37 ns a step.
	# For 4 ranks: T(4) = 1105.26 + 447.37 * 6 + B * 1.5 / 10 = 3789.47
	# + 0.15 B; T(2) = 2000 + B / 10. 100000 B: 18789.47 / 12000 * 12000
	# = 18789; 1000000 B: 153789; the forward scalar 4 B: about 3790
	# (3789: the 4-byte transfers were written rounded down, so the fit
	# is a hair off). The tensor-parallel 4096-byte all-reduces stay at
	# 2410.
	mkjob > job.kg
	graph-scale-dp 4 job.kg > four.kg
	[ "$(durations four.kg | awk '$1 % 4 == 0 { print $2 }' | sort -u)" = 2410 ]
	[ "$(durations four.kg | awk '$1 % 4 == 1 { print $2 }' | sort -u)" = 3789 ]
	[ "$(durations four.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 18789 ]
	[ "$(durations four.kg | awk '$1 % 4 == 3 { print $2 }' | sort -u)" = 153789 ]
	# od keeps the traced times
	[ "$(graphcat four.kg | jq -r 'select(.r == "task" and .id == 3) | .od')" = 102000 ]
}

@test "graph-scale-dp: one rank left, the data-parallel collectives take no time and meet no one" {
	mkjob > job.kg
	graph-scale-dp 1 job.kg > one.kg
	[ "$(durations one.kg | awk '$1 % 4 != 0 { print $2 }' | sort -u)" = 0 ]
	# only the tensor-parallel rank edges are left: 0 -> 4, 8 -> 12
	[ "$(graphcat one.kg | jq -c 'select(.r == "edge" and .k == "rank") | [.src, .dst]' | tr '\n' ' ')" = "[0,4] [8,12] " ]
	graphsim one.kg | graphstat --csv > /dev/null
}

@test "graph-scale-dp: a new group across nodes takes the network from the job, --net, --topology, or the built-in h100's with a warning" {
	# --gpus-per-node 4: the job's groups are inside node 0; dp 4 puts
	# [0, 2, 4, 6] on nodes 0 and 1
	mkjob > job.kg
	run -0 --separate-stderr graph-scale-dp --gpus-per-node 4 -o h100.kg 4 job.kg
	# the header names no GPU (format 1.2): h100's, and the tool says why
	[ "$stderr" = "graph-scale-dp: warning: job.kg: section 0: no collective over the network in the job: it is taken to be the built-in h100 topology's (50 GB/s a GPU, NCCL's ring model; the stream names no GPU; give it with --net or --topology)" ]
	# DGX H100: a 400 Gb/s NIC a GPU (50 GB/s), timed as NCCL's ring
	# over the network, the least of its protocols: 100000 B among 4
	# (6 steps, 150000 B a link) take 3600 + 6 * 2700 + 150000 / 12.5 =
	# 31800 ns with LL (a quarter of the bandwidth), against 8400 + 6 *
	# 9600 + 150000 / 50 = 69000 with Simple (the job's own 12000 ns for
	# 2 ranks on NVLink is the fit's)
	[ "$(durations h100.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 31800 ]
	# recorded in the section's tools entry: the degree set (dp 2 of world 4
	# to 4: world 4 / 2 * 4 = 8) and the link assumed
	[ "$(graphcat h100.kg | jq -r 'select(.r == "header") | .tools[-1]')" = "graph-scale-dp $(graph-scale-dp --version | cut -d' ' -f3) set: dp=4, world=8 assumed network: built-in h100 (50 GB/s, NCCL's ring model)" ]
	run -0 --separate-stderr graph-scale-dp -q --gpus-per-node 4 4 job.kg
	[ "$stderr" = "" ]
	# 5 GB/s and 1 us: 100000 B take (6000 + 30000) / 12000 * 12000
	graph-scale-dp --gpus-per-node 4 --net 5,1 4 job.kg > net.kg
	[ "$(durations net.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 36000 ]
	# by name: DGX A100's 25 GB/s: LL's 3600 + 16200 + 150000 / 6.25 =
	# 43800 (Simple's 8400 + 57600 + 6000 = 72000); no warning
	run -0 --separate-stderr graph-scale-dp --gpus-per-node 4 --topology a100 -o a100.kg 4 job.kg
	[ "$stderr" = "" ]
	[ "$(durations a100.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 43800 ]
	[ "$(graphcat a100.kg | jq -r 'select(.r == "header") | .tools[-1]' | cut -d' ' -f1)" = "graph-scale-dp" ]
	# --net over a named topology, whichever comes first
	graph-scale-dp --gpus-per-node 4 --net 5,1 --topology v100 4 job.kg > nv.kg
	cmp <(durations net.kg) <(durations nv.kg)
	# the report says which network was assumed
	graphsim h100.kg | graphstat | grep -q "^  network assumed: graph-scale-dp: built-in h100 (50 GB/s, NCCL's ring model)$"
}

@test "graph-scale-dp: a graph that is not a job, or has no phases or no data-parallel group, stops it" {
	kineto2graph -q "$ROOT/examples/ddp-step.json" > rank.kg
	run -1 --separate-stderr graph-scale-dp 4 rank.kg
	[ "$stderr" = "graph-scale-dp: rank.kg: section 0: not a job graph: the transfer times come from matching collectives across ranks (graph-deps --merge)" ]
	mkjob > job.kg
	graphcat job.kg | sed 's/,"ph":"[a-z]*"//' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > nophase.kg
	run -1 --separate-stderr graph-scale-dp 4 nophase.kg
	[[ $stderr == "graph-scale-dp: nophase.kg: section 0: its collectives have no phase"* ]]
	# every group reducing in the forward phase: tensor-parallel only
	graphcat job.kg | sed 's/"ph":"bwd"/"ph":"fwd"/; s/,"by":4,/,"by":4096,/' | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > tponly.kg
	run -1 --separate-stderr graph-scale-dp 4 tponly.kg
	[ "$stderr" = "graph-scale-dp: tponly.kg: section 0: no process group reduces only in the backward and optimizer phases: no data-parallel group to scale (give it with --dp-group RANKS)" ]
	# ... unless the user says which: the groups [0, 2] and [1, 3]
	graph-scale-dp --dp-group 0,2 2 tponly.kg > told.kg
	diff <(durations tponly.kg) <(durations told.kg)
	# and no partial output
	run -1 bash -c 'graph-scale-dp 4 tponly.kg | graphcat'
	# one rank's collectives without ranks and not matched: say how to tell
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/worker0_*.json.gz | graph-deps --merge > one.kg
	run -1 --separate-stderr graph-scale-dp 4 one.kg
	[ "$stderr" = 'graph-scale-dp: one.kg: section 0: its collectives carry no process-group ranks (NCCL metadata, `pgr`) and were not matched across ranks: give the data-parallel group with --dp-group RANKS' ]
}

@test "graph-scale-dp: tracegen's job at its own degree is unchanged, and scales both ways" {
	tracegen --preset tiny -d job
	kineto2graph -q job/*.json.gz | graph-deps --merge > job.kg
	# rank, iteration, simulated span and breakdown (an edited graph is a
	# prediction: its measured columns are left empty)
	graph-scale-dp 2 job.kg | graphsim | graphstat --csv | cut -d, -f1,2,4,6-9 > same
	graphsim job.kg | graphstat --csv | cut -d, -f1,2,4,6-9 > base
	diff base same
	# (tiny runs 4 ranks a node: at dp 4 its stages' pairs cross nodes)
	for n in 1 4; do
		graph-scale-dp --net 50,5 "$n" job.kg | graphsim | graphstat --csv > /dev/null
	done
}

@test "graph-scale-dp: frames none of whose records change pass as they came" {
	# tracegen's small job (tp 2, pp 2, dp 2) to dp 4 on one node of 8:
	# the data-parallel buckets are re-timed; frames without them (or a
	# rank the new layout moves) go out byte for byte (told apart by
	# tests/tools/zframes.py), and every record but those re-timed and
	# the header decodes as it was read
	tracegen --preset small -d job
	kineto2graph -q job/*.json.gz | graph-deps --merge > job.kg
	graph-scale-dp -q 4 job.kg > four.kg
	frames() { python3 "$ROOT/tests/tools/zframes.py" "$1" | awk '$2 > 1000 { print $3 }' | sort; }
	[ "$(comm -12 <(frames job.kg) <(frames four.kg) | wc -l)" -ge 1 ]
	[ "$(comm -13 <(frames job.kg) <(frames four.kg) | wc -l)" -ge 1 ]
	diff <(graphcat job.kg | jq -c 'select(.r != "header" and .k != "coll")') \
	    <(graphcat four.kg | jq -c 'select(.r != "header" and .k != "coll")')
	[ "$(graphcat job.kg | jq -c 'select(.k == "coll")' | wc -l)" = \
	    "$(graphcat four.kg | jq -c 'select(.k == "coll")' | wc -l)" ]
	graph-deps --check four.kg > /dev/null
}

@test "graph-scale-dp: a pipeline pair that more replicas push onto another node is re-timed for the network" {
	# tp 1, dp 2, pp 2 on one node of 4: stage 0 is ranks 0 and 1, stage 1
	# ranks 2 and 3; data-parallel groups [0, 1] and [2, 3] (backward
	# all-reduces, 2 ranks: 2 steps, 1000000 B); pipeline pairs [0, 2] and
	# [1, 3] (a 1000-byte send and its receive, 2000 ns: fitted on latency
	# alone, 2000 ns a step). At dp 4 stage 1 is ranks 4 to 7, node 1:
	# the pairs cross nodes, and --net 1,5 times them 5000 + 1000 / 1 =
	# 6000 ns.
	awk 'BEGIN {
		print "{\"r\":\"header\",\"format\":\"kgraph\",\"major\":1,\"minor\":2,\"producer\":\"t\",\"unit\":\"ns\",\"rank\":-1,\"world\":4,\"ranks\":[0,1,2,3]}"
		print "{\"r\":\"str\",\"id\":0,\"s\":\"nccl\"}"
		print "{\"r\":\"str\",\"id\":1,\"s\":\"[0, 1]\"}"
		print "{\"r\":\"str\",\"id\":2,\"s\":\"[2, 3]\"}"
		print "{\"r\":\"str\",\"id\":3,\"s\":\"[0, 2]\"}"
		print "{\"r\":\"str\",\"id\":4,\"s\":\"[1, 3]\"}"
		for (r = 0; r < 4; r++)
			printf "{\"r\":\"proc\",\"id\":%d,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":%d}\n", r, r
		for (r = 0; r < 4; r++) {
			# 2r: the pipeline op (send on stage 0, recv on stage 1); 2r+1: the dp all-reduce
			printf "{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":0,\"d\":2000,\"ts\":0,\"it\":1,\"coll\":\"%s\",\"by\":1000,\"pgr\":%d,\"ph\":\"fwd\"}\n", 2 * r, r, r < 2 ? "send" : "recv", r % 2 == 0 ? 3 : 4
			printf "{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":0,\"d\":102000,\"ts\":10000,\"it\":1,\"coll\":\"allreduce\",\"by\":1000000,\"pgr\":%d,\"ph\":\"bwd\"}\n", 2 * r + 1, r, r < 2 ? 1 : 2
		}
		for (r = 0; r < 4; r++)
			printf "{\"r\":\"edge\",\"src\":%d,\"dst\":%d,\"k\":\"stream\"}\n", 2 * r, 2 * r + 1
		print "{\"r\":\"edge\",\"src\":0,\"dst\":4,\"k\":\"rank\"}"
		print "{\"r\":\"edge\",\"src\":2,\"dst\":6,\"k\":\"rank\"}"
		print "{\"r\":\"edge\",\"src\":1,\"dst\":3,\"k\":\"rank\"}"
		print "{\"r\":\"edge\",\"src\":5,\"dst\":7,\"k\":\"rank\"}"
		print "{\"r\":\"end\",\"tasks\":8,\"edges\":8,\"procs\":4,\"strs\":5}"
	}' | mkstream > pp.kg
	# with the built-in network, NCCL's LL: 3600 + 2700 + 1000 / 12.5 =
	# 6380 ns (Simple: 8400 + 9600 + 1000 / 50 = 18020)
	graph-scale-dp -q --gpus-per-node 4 4 pp.kg > h100.kg
	[ "$(durations h100.kg | awk '$1 % 2 == 0 { print $2 }' | sort -u)" = 6380 ]
	graph-scale-dp --gpus-per-node 4 --net 1,5 4 pp.kg > four.kg
	[ "$(durations four.kg | awk '$1 % 2 == 0 { print $2 }' | sort -u)" = 6000 ]
	# at dp 2 nothing moves
	graph-scale-dp --gpus-per-node 4 2 pp.kg > two.kg
	diff <(durations pp.kg) <(durations two.kg)
}

@test "graph-scale-dp: --version names the tool; a failed run leaves no output file" {
	run -0 graph-scale-dp --version
	[[ $output == "graph-scale-dp (kgraph) "* ]]
	kineto2graph -q "$ROOT/examples/ddp-step.json" > rank.kg
	run -1 graph-scale-dp -o out.kg 4 rank.kg
	[ ! -e out.kg ]
	run -1 --separate-stderr graph-scale-dp 2 nosuch.kg
	[ "$stderr" = "graph-scale-dp: nosuch.kg: No such file or directory" ]
	mkjob > job.kg
	run -1 --separate-stderr bash -c 'graph-scale-dp 2 job.kg > /dev/full'
	[ "$stderr" = "graph-scale-dp: stdout: write error: No space left on device" ]
}

@test "graph-scale-dp: a topology file gives the links the job does not show" {
	# the network of the --net test above, from a file, with the nodes' size
	mkjob > job.kg
	printf '# two nodes of 4\ngpus-per-node 4\nnetwork 5 1   # GB/s, us\n' > topo
	graph-scale-dp --topology topo 4 job.kg > net.kg
	[ "$(durations net.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 36000 ]
	# --gpus-per-node wins over the file's
	graph-scale-dp --topology topo --gpus-per-node 8 4 job.kg > one.kg
	[ "$(durations one.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 18789 ]
	printf 'network 5\n' > bad
	run -1 --separate-stderr graph-scale-dp --topology bad 4 job.kg
	[ "$stderr" = "graph-scale-dp: bad: line 1: network takes GB/s and microseconds a step" ]
	printf '\nfabric 5 1\n' > bad
	run -1 --separate-stderr graph-scale-dp --topology bad 4 job.kg
	[ "$stderr" = "graph-scale-dp: bad: line 2: unknown key 'fabric' (nvlink, network, gpus-per-node)" ]
	run -1 --separate-stderr graph-scale-dp --topology nosuch 4 job.kg
	[ "$stderr" = "graph-scale-dp: nosuch: No such file or directory" ]
}

@test "graph-scale-dp: the network assumed is the built-in topology of the GPU the header names, else h100's, said" {
	mkjob > job.kg
	# the topology each name takes, its network a GPU, and the time of a
	# 100000 B all-reduce among 4 ranks across nodes (6 steps, 150000 B a
	# link): the least of LL (3600 + 6 * 2700 ns, a quarter of the
	# bandwidth) and Simple (8400 + 6 * 9600 ns, all of it)
	while IFS='|' read -r gpu topo gbps want why; do
		graphcat job.kg | jq -c --arg g "$gpu" 'if .r == "header" then .minor = 5 | .gpu = $g else . end' | mkstream > g.kg
		run -0 --separate-stderr graph-scale-dp --gpus-per-node 4 -o out.kg 4 g.kg
		[ "$stderr" = "graph-scale-dp: warning: g.kg: section 0: no collective over the network in the job: it is taken to be the built-in $topo topology's ($gbps GB/s a GPU, NCCL's ring model; ${why:+$why; }give it with --net or --topology)" ]
		[ "$(durations out.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = "$want" ]
	done <<-'EOF'
	NVIDIA H100 80GB HBM3|h100|50|31800
	NVIDIA H200|h100|50|31800
	NVIDIA GH200 480GB|h100|50|31800
	NVIDIA A100-SXM4-80GB|a100|25|43800
	NVIDIA A100-PG509-200|a100|25|43800
	Tesla V100-SXM2-16GB|v100|6.25|90000
	AMD Instinct MI300X|mi300x|50|31800
	AMD Instinct MI300X VF|mi300x|50|31800
	AMD Instinct MI325X|mi300x|50|31800
	AMD Radeon Graphics|h100|50|31800|the GPU (AMD Radeon Graphics) matches no built-in topology
	AMD Instinct MI210|h100|50|31800|the GPU (AMD Instinct MI210) matches no built-in topology
	AMD Instinct MI300A|h100|50|31800|the GPU (AMD Instinct MI300A) matches no built-in topology
	NVIDIA H800|h100|50|31800|the GPU (NVIDIA H800) matches no built-in topology
	NVIDIA GeForce RTX 2080 Ti|h100|50|31800|the GPU (NVIDIA GeForce RTX 2080 Ti) matches no built-in topology
	Tesla V1000|h100|50|31800|the GPU (Tesla V1000) matches no built-in topology
	|h100|50|31800|the stream names no GPU
	EOF
	# -v names the one taken in the model's lines
	graphcat job.kg | jq -c 'if .r == "header" then .minor = 5 | .gpu = "Tesla V100-SXM2-16GB" else . end' | mkstream > g.kg
	run -0 --separate-stderr graph-scale-dp -v --gpus-per-node 4 4 g.kg
	[ "$(printf '%s\n' "${stderr_lines[@]}" | grep -c 'over the network: .* (given: built-in v100 topology, assumed)$')" = 1 ]
	# the tools entry and graphstat say which
	graph-scale-dp -q --gpus-per-node 4 -o out.kg 4 g.kg
	graphsim out.kg | graphstat | grep -q "^  network assumed: graph-scale-dp: built-in v100 (6.25 GB/s, NCCL's ring model)$"
}

@test "graph-scale-dp: DLRM's 8 ranks without metadata: the group from the collectives matched across ranks, all-to-all and all-reduce re-timed" {
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge > dlrm.kg
	run -0 --separate-stderr graph-scale-dp -v -o 16.kg 16 dlrm.kg
	# per rank (kernels of 8 ranks): 4 embedding all-to-alls forward, 1
	# backward, 3 dense gradient all-reduces backward (param_dlrm_8rank_v100's README and
	# trace: 5 c10d::alltoall_base_, 3 c10d::allreduce_ a rank)
	[ "${stderr_lines[0]}" = "graph-scale-dp: dlrm.kg: section 0: group [0, 1, 2, 3, 4, 5, 6, 7] (8 ranks, NVLink; matched across the ranks): data-parallel; kernels: allreduce bwd 24, alltoall fwd 32, alltoall bwd 8" ]
	[ "${stderr_lines[1]}" = "graph-scale-dp: dlrm.kg: section 0: data-parallel degree 8 -> 16, tensor-parallel 1, 8 GPUs a node" ]
	# the job's GPU is a V100 (Tesla V100-SXM2-32GB): the DGX-1's network,
	# 4 EDR InfiniBand NICs of 100 Gb/s for 8 GPUs
	[ "${stderr_lines[2]}" = "graph-scale-dp: warning: dlrm.kg: section 0: no collective over the network in the job: it is taken to be the built-in v100 topology's (6.25 GB/s a GPU, NCCL's ring model; give it with --net or --topology)" ]
	# 16 ranks span two nodes: every collective of the group takes longer
	[ "$(graphcat dlrm.kg | jq -r 'select(.r == "task" and .k == "coll") | .id' | wc -l)" = 64 ]
	[ "$(paste <(durations dlrm.kg) <(durations 16.kg) | awk '$2 < $4' | wc -l)" = 64 ]
	# the all-reduce's bytes come from the nccl:all_reduce annotation
	# (394241 floats: 1576964 B), the all-to-all's from c10d::alltoall_base_
	[ "$(graphcat dlrm.kg | jq -r 'select(.r == "task" and .coll == "allreduce") | .by' | sort -un | tail -1)" = 1576964 ]
	# the identity edit is exact
	graph-scale-dp -q 8 dlrm.kg > 8.kg
	diff <(durations dlrm.kg) <(durations 8.kg)
	# the V100 node's own network, by name: no warning, and the same
	# times as the one the GPU's name chose
	run -0 --separate-stderr graph-scale-dp --topology v100 -o v.kg 16 dlrm.kg
	[ "$stderr" = "" ]
	cmp <(durations 16.kg) <(durations v.kg)
}

@test "graph-scale-dp: DDP with NCCL metadata: the forward buffer broadcast does not make the group tensor-parallel" {
	need_traces
	kineto2graph -q "$TRACES"/hta_ddp_2rank_a100_nccl_meta/nccl_data.json.gz | graph-deps --merge > ddp.kg
	run -0 --separate-stderr graph-scale-dp -v -o 8.kg 8 ddp.kg
	# 3 steps of 5 gradient buckets and 2 buffer broadcasts (the trace's
	# record_param_comms: 15 allreduce, 6 broadcast)
	[ "${stderr_lines[0]}" = "graph-scale-dp: ddp.kg: section 0: group [0, 1] (2 ranks, NVLink; the trace's process-group ranks): data-parallel; kernels: allreduce bwd 15, broadcast fwd 6" ]
	[ "${stderr_lines[1]}" = "graph-scale-dp: ddp.kg: section 0: data-parallel degree 2 -> 8, tensor-parallel 1, 8 GPUs a node" ]
	graph-scale-dp 2 ddp.kg > 2.kg
	diff <(durations ddp.kg) <(durations 2.kg)
}

@test "graph-scale-dp: a DDP job traced at world size 1 gets the all-reduces NCCL did not run, timed for the new degree" {
	# gpt_L8_H1024_ddp1: DDP at world size 1 asks NCCL for each gradient
	# bucket's all-reduce (record_param_comms, the bucket's elements in
	# its Input Dims, a cudaStreamWaitEvent for the gradients) and NCCL
	# runs no kernel. One kernel is made per request, on a stream of its
	# own, of the bucket's elements at 4 bytes (fp32 gradients).
	need_gpu
	f=$GPU/gpt_L8_H1024_ddp1.json.gz
	kineto2graph -q "$f" | graph-deps --merge > ddp1.kg
	nreq=$(zcat "$f" | jq '[.traceEvents[] | select(.name == "record_param_comms")] | length')
	run -0 --separate-stderr graph-scale-dp -v 8 ddp1.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: ddp1.kg: section 0: $nreq all-reduces made where NCCL, at world size 1, ran none" ]
	graph-scale-dp -q 8 ddp1.kg > d8.kg
	graph-deps --check d8.kg
	# their sizes, in the order asked, are the trace's buckets
	zcat "$f" | jq -r '[.traceEvents[] | select(.name == "record_param_comms")] | sort_by(.ts) | .[] | .args["Input Dims"][0][0][0] * 4' > want
	graphcat -r d8.kg | jq -r 'select(.r == "task" and .k == "coll") | .by' > got
	diff want got
	# each takes NCCL's ring time for 8 ranks on the built-in h100
	# topology's NVLink: 2(n-1) steps and 2(n-1)/n of its bytes, the
	# least of LL (3.6 us, 0.47 us a step, a quarter of 450 GB/s), LL128
	# (10 us, 1.9 us a step, 0.92 of it) and Simple (8.4 us, 3.4 us a
	# step, all of it)
	graphcat -r d8.kg | jq -r 'select(.r == "task" and .k == "coll") | "\(.by) \(.d)"' > times
	awk '{ y = $1 * 2 * 7 / 8; a = 3600 + 14 * 470 + y / 112.5; b = 10000 + 14 * 1900 + y / 414
		c = 8400 + 14 * 3400 + y / 450; t = a < b ? a : b; t = t < c ? t : c
		d = t - $2; if (d < 0) d = -d; if (d > 1) exit 1 }' times
	# the buckets (16 to 227 MB) are LL128's: 16785408 B take 10 + 26.6
	# + 70.9 = 107.5 us, against Simple's 8.4 + 47.6 + 65.3 = 121.3
	[ "$(awk '$1 == 16785408 { print $2 }' times | sort -u)" = 107553 ]
	# each after its bucket's gradients and the one before; the
	# optimizer's first kernel after an iteration's last (three
	# iterations)
	[ "$(graphcat -r d8.kg | jq -s '[.[] | select(.r == "task" and .k == "coll") | .id] as $c | [.[] | select(.r == "edge" and (.dst as $d | $c | index($d)) != null) | .k] | group_by(.) | map("\(.[0]) \(length)") | join(" ")')" = "\"event $nreq launch $nreq stream $((nreq - 1))\"" ]
	[ "$(graphcat -r d8.kg | jq -s '[.[] | select(.r == "task" and .k == "coll") | .id] as $c | [.[] | select(.r == "edge" and .k == "event" and (.src as $d | $c | index($d)) != null)] | length')" = 3 ]
	# identity: at degree 1 they take no time, and the replay is the trace's
	graph-scale-dp -q 1 ddp1.kg > d1.kg
	sim() { graphsim "$1" | graphstat --csv | awk -F, 'NR > 1 { print $1, $2, $4 }'; }
	[ "$(sim d1.kg)" = "$(sim ddp1.kg)" ]
}

# A job of 2 ranks, one data-parallel group [0, 1]: backward all-reduces
# of $1 bytes (none: "") taking $2 ns each, two a rank, rank edges
# joining each pair. $3: a second size for the second pair ("" for $1).
mkpair() {
	awk -v by="$1" -v d="$2" -v by2="${3:-$1}" -v d2="${4:-$2}" 'BEGIN {
		print "{\"r\":\"header\",\"format\":\"kgraph\",\"major\":1,\"minor\":2,\"producer\":\"t\",\"unit\":\"ns\",\"rank\":-1,\"world\":2,\"ranks\":[0,1]}"
		print "{\"r\":\"str\",\"id\":0,\"s\":\"[0, 1]\"}"
		for (r = 0; r < 2; r++)
			printf "{\"r\":\"proc\",\"id\":%d,\"k\":\"stream\",\"pid\":0,\"tid\":7,\"rank\":%d}\n", r, r
		for (r = 0; r < 2; r++)
			for (k = 0; k < 2; k++)
				printf "{\"r\":\"task\",\"id\":%d,\"p\":%d,\"k\":\"coll\",\"n\":0,\"d\":%d,\"ts\":%d,\"it\":1,\"coll\":\"allreduce\",%s\"pgr\":0,\"ph\":\"bwd\"}\n", 2 * r + k, r, k ? d2 : d, 1000000 * k, (k ? by2 : by) == "" ? "" : "\"by\":" (k ? by2 : by) ","
		printf "{\"r\":\"edge\",\"src\":0,\"dst\":1,\"k\":\"stream\"}\n{\"r\":\"edge\",\"src\":2,\"dst\":3,\"k\":\"stream\"}\n"
		printf "{\"r\":\"edge\",\"src\":0,\"dst\":2,\"k\":\"rank\"}\n{\"r\":\"edge\",\"src\":1,\"dst\":3,\"k\":\"rank\"}\n"
		printf "{\"r\":\"end\",\"tasks\":4,\"edges\":4,\"procs\":2,\"strs\":1}\n"
	}' | mkstream
}

@test "graph-scale-dp: a fit whose latency is implausible for its link is set aside, said, and the wait kept" {
	# 1 MB in 2 ms over NVLink between 2 ranks: 1000 us a step, the ranks'
	# waits. The built-in h100 topology's NVLink times the transfer: at 2
	# ranks LL's 3.6 + 2 x 0.47 us + 1e6 / 112.5 GB/s = 13429 ns, at 4 ranks
	# 3.6 + 6 x 0.47 + 1.5e6 / 112.5 = 19753 ns; the rest of the 2 ms is the
	# wait, kept: 2000000 + 19753 - 13429
	mkpair 1000000 2000000 > p.kg
	run -0 --separate-stderr graph-scale-dp -o 4.kg 4 p.kg
	[ "${stderr_lines[0]}" = "graph-scale-dp: warning: p.kg: section 0: the allreduce fit over NVLink (1000.00 us a step, no bandwidth term) is implausible for the link (over 100 us a step: it holds the ranks' waits, not the transfer): the built-in h100 topology's is used instead (3.60 us + 0.47 us a step, 112.5 GB/s; 10.00 us + 1.90 us a step, 414.0 GB/s; 8.40 us + 3.40 us a step, 450.0 GB/s (the least of NCCL's LL, LL128 and Simple))" ]
	[ "$(graphcat -r 4.kg | jq -r 'select(.r == "task") | .d' | sort -u)" = 2006324 ]
	# the traced degree is the replay
	graph-scale-dp -q -o 2.kg 2 p.kg
	diff <(durations p.kg) <(durations 2.kg)
}

@test "graph-scale-dp: a plausible fit is kept; a faster network does not make the larger group faster" {
	# 50 us a step and 100 GB/s, exactly: 1 MB in 110 us, 4 MB in 140 us.
	# At 4 ranks, 2 a node, the group crosses nodes; a network of 1000
	# GB/s and no latency would take 1.5 or 6 us, less than the pair
	# inside the node: the larger group takes no less than the pair it
	# holds, so nothing changes
	mkpair 1000000 110000 4000000 140000 > p.kg
	run -0 --separate-stderr graph-scale-dp --gpus-per-node 2 --net 1000,0 -o 4.kg 4 p.kg
	[ -z "$stderr" ]
	diff <(durations p.kg) <(durations 4.kg)
	# and a slower one is what it says: 1e6 x 1.5 / 10 GB/s + 6 x 10 us = 210 us
	graph-scale-dp --gpus-per-node 2 --net 10,10 -o s.kg 4 p.kg
	[ "$(graphcat -r s.kg | jq -r 'select(.r == "task" and .id == 0) | .d')" = 210000 ]
}

@test "graph-scale-dp: collectives with no message size are refused at another degree, not scaled by a made-up factor" {
	mkpair "" 110000 > p.kg
	run -1 --separate-stderr graph-scale-dp 4 p.kg
	[ "$stderr" = "graph-scale-dp: p.kg: section 0: 4 of the data-parallel group's collectives carry no message size (bytes): their time among 4 ranks is not known" ]
	graph-scale-dp -o 2.kg 2 p.kg
	diff <(durations p.kg) <(durations 2.kg)
}

@test "graph-scale-dp: each rank of the DLRM job alone: its replay at the traced degree, no faster at 16" {
	need_traces
	for f in "$TRACES"/param_dlrm_8rank_v100/kineto/worker*; do
		kineto2graph -q "$f" | graph-deps --merge > r.kg
		step() { graphsim "$1" | graphstat --csv | awk -F, 'NR > 1 { s += $4 } END { print s }'; }
		base=$(step r.kg)
		graph-scale-dp -q --dp-group 0-7 -o 8.kg 8 r.kg
		graph-scale-dp -q --dp-group 0-7 -o 16.kg 16 r.kg
		s8=$(step 8.kg) s16=$(step 16.kg)
		echo "$f $base $s8 $s16"
		awk -v b="$base" -v a="$s8" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.01 * b) }'
		[ "$s16" -ge "$s8" ]
	done
}

@test "graph-scale-dp: the DDP rank from 2 to 1024 replicas: collective time and step never fall" {
	need_traces
	kineto2graph -q "$TRACES"/hta_ddp_2rank_a100_nccl_meta/nccl_data.json.gz | graph-deps --merge > ddp.kg
	pc=0 ps=0
	for n in 2 4 8 16 32 64 128 256 512 1024; do
		graph-scale-dp -q -o d.kg $n ddp.kg
		c=$(graphcat -r d.kg | jq -s '[.[] | select(.r == "task" and .k == "coll") | .d] | add')
		s=$(graphsim d.kg | graphstat --csv | awk -F, 'NR > 1 { s += $4 } END { print s }')
		echo "$n $c $s"
		[ "$c" -ge "$pc" ]
		[ "$s" -ge "$ps" ]
		pc=$c ps=$s
	done
}
