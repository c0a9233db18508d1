#!/usr/bin/env bats
# graph-scale-dp: the checklist; the data-parallel group found and
# re-timed by hand-worked numbers; the identity; N = 1; what stops it.

load helpers

bats_require_minimum_version 1.5.0

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

USAGE='usage: graph-scale-dp [-q] [-o FILE] [--gpus-per-node N] [--net GBPS,US] [--topology FILE] N [FILE ...]'

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
	graphcat same.kg | head -n 1 | jq -e '.tools[-1] == "graph-scale-dp 0.1"'
}

@test "graph-scale-dp: the data-parallel group's collectives are re-timed, the tensor-parallel ones are not" {
	# The model fitted on the job recovers alpha 1000 ns, beta 10 B/ns.
	# For 4 ranks: T(4) = 1000 * 6 + B * 1.5 / 10; T(2) = 2000 + B / 10.
	# 100000 B: 21000 / 12000 * 12000 = 21000; 1000000 B: 156000; the
	# forward scalar 4 B: about 6000 (5999: the 4-byte transfers were
	# written rounded down, so the fit is a hair off). The
	# tensor-parallel 4096-byte all-reduces stay at 2410.
	mkjob > job.kg
	graph-scale-dp 4 job.kg > four.kg
	[ "$(durations four.kg | awk '$1 % 4 == 0 { print $2 }' | sort -u)" = 2410 ]
	[ "$(durations four.kg | awk '$1 % 4 == 1 { print $2 }' | sort -u)" = 5999 ]
	[ "$(durations four.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 21000 ]
	[ "$(durations four.kg | awk '$1 % 4 == 3 { print $2 }' | sort -u)" = 156000 ]
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

@test "graph-scale-dp: a new group across nodes needs the network, from the job or --net" {
	# --gpus-per-node 4: the job's groups are inside node 0; dp 4 puts
	# [0, 2, 4, 6] on nodes 0 and 1
	mkjob > job.kg
	run -1 --separate-stderr graph-scale-dp --gpus-per-node 4 4 job.kg
	[ "$stderr" = "graph-scale-dp: job.kg: section 0: no allreduce over the network (across nodes) in the job to fit the communication model on (give it with --net GBPS,US)" ]
	# 5 GB/s and 1 us: 100000 B take (6000 + 30000) / 12000 * 12000
	graph-scale-dp --gpus-per-node 4 --net 5,1 4 job.kg > net.kg
	[ "$(durations net.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 36000 ]
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
	[ "$stderr" = "graph-scale-dp: tponly.kg: section 0: no process group reduces only in the backward and optimizer phases: no data-parallel group to scale" ]
	# and no partial output
	run -1 bash -c 'graph-scale-dp 4 tponly.kg | graphcat'
	# the DLRM job: no process-group metadata
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge > dlrm.kg
	run -1 --separate-stderr graph-scale-dp 4 dlrm.kg
	[ "$stderr" = 'graph-scale-dp: dlrm.kg: section 0: its collectives carry no process-group ranks (NCCL metadata, `pgr`): the groups cannot be told apart' ]
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
	run -1 --separate-stderr graph-scale-dp --gpus-per-node 4 4 pp.kg
	[ "$stderr" = "graph-scale-dp: pp.kg: section 0: no send over the network (across nodes) in the job to fit the communication model on (give it with --net GBPS,US)" ]
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
	[ "$stderr" = "graph-scale-dp: stdout: No space left on device" ]
}

@test "graph-scale-dp: a topology file gives the links the job does not show" {
	# the network of the --net test above, from a file, with the nodes' size
	mkjob > job.kg
	printf '# two nodes of 4\ngpus-per-node 4\nnetwork 5 1   # GB/s, us\n' > topo
	graph-scale-dp --topology topo 4 job.kg > net.kg
	[ "$(durations net.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 36000 ]
	# --gpus-per-node wins over the file's
	graph-scale-dp --topology topo --gpus-per-node 8 4 job.kg > one.kg
	[ "$(durations one.kg | awk '$1 % 4 == 2 { print $2 }' | sort -u)" = 21000 ]
	printf 'network 5\n' > bad
	run -1 --separate-stderr graph-scale-dp --topology bad 4 job.kg
	[ "$stderr" = "graph-scale-dp: bad: line 1: network takes GB/s and microseconds a step" ]
	printf '\nfabric 5 1\n' > bad
	run -1 --separate-stderr graph-scale-dp --topology bad 4 job.kg
	[ "$stderr" = "graph-scale-dp: bad: line 2: unknown key 'fabric' (nvlink, network, gpus-per-node)" ]
	run -1 --separate-stderr graph-scale-dp --topology nosuch 4 job.kg
	[ "$stderr" = "graph-scale-dp: nosuch: No such file or directory" ]
}
