#!/usr/bin/env bats
# doc/COLLECTING.md and scripts/profile-for-kgraph.py, run as written:
# the Python snippets and the script against a stand-in for torch
# (tests/tools/standin-torch, which logs what they ask of the profiler
# and where DDP would reduce), the shell snippets on shared traces.

load helpers

GUIDE="$ROOT/doc/COLLECTING.md"

# The guide's fenced blocks of language LANG, each into NAME-N.
blocks() { # LANG NAME
	awk -v lang="$1" -v name="$2" '
		/^```/ && !inb { if ($0 == "```" lang) { inb = 1; n++; f = name "-" n } next }
		/^```$/ && inb { inb = 0; close(f); next }
		inb { print > f }
		END { print n + 0 }' "$GUIDE"
}

standin() { # python3 with the stand-in torch, its log in ./log
	PYTHONPATH="$ROOT/tests/tools/standin-torch" TORCH_LOG="$PWD/log" python3 "$@"
}

@test "COLLECTING: the recipe profiles with shapes, memory and stacks, a file per rank zero-padded" {
	command -v python3 > /dev/null || skip "no python3"
	[ "$(blocks python py)" -eq 2 ]
	# train_one_iteration() is the reader's; here it does nothing
	printf 'def train_one_iteration():\n    pass\n\n' | cat - py-1 > recipe.py
	standin recipe.py
	grep -qx "profile record_shapes=True" log
	grep -qx "profile profile_memory=True" log
	grep -qx "profile with_stack=True" log
	grep -qx "profile on_trace_ready=tensorboard_trace_handler('traces', worker_name='rank00000', use_gzip=True)" log
	# 6 iterations, a step each
	[ "$(grep -c '^profiler step$' log)" -eq 6 ]
}

@test "COLLECTING: gradient accumulation under DDP reduces once a step, no_sync holding forward and backward" {
	command -v python3 > /dev/null || skip "no python3"
	blocks python py > /dev/null
	cat py-2 - > step.py <<-'PY'

	import torch
	from torch.nn.parallel import DistributedDataParallel
	from torch.profiler import profile

	model = DistributedDataParallel(torch.nn.Linear(4, 4))
	with profile() as prof:
	    for _ in range(2):
	        train_step(model, torch.optim.SGD(model.parameters()),
	                   [torch.randn(4), torch.randn(4), torch.randn(4)], prof)
	PY
	standin step.py
	# each step: micro-batches 0 and 1 wholly under no_sync (sync=0),
	# the last one reducing, then the optimizer
	want=$(for s in 1 2; do
		for m in 0 1; do printf 'range microbatch_%d/forward\nforward sync=0\nrange microbatch_%d/backward\nbackward sync=0\n' $m $m; done
		printf 'range microbatch_2/forward\nforward sync=1\nrange microbatch_2/backward\nbackward sync=1\n'
		printf 'range optimizer\noptimizer step\nprofiler step\n'
	done)
	[ "$(cat log)" = "$want" ]
}

@test "COLLECTING: profile-for-kgraph.py reduces once a step and names its files by the rank zero-padded" {
	command -v python3 > /dev/null || skip "no python3"
	WORLD_SIZE=2 RANK=3 standin "$ROOT/scripts/profile-for-kgraph.py" --out tr
	grep -qx "profile on_trace_ready=tensorboard_trace_handler('tr', worker_name='rank00003', use_gzip=True)" log
	grep -qx "profile profile_memory=True" log
	grep -qx "profile with_stack=True" log
	# 6 iterations of 2 micro-batches: the first's forward and backward
	# under no_sync, the second's reducing
	[ "$(grep -c '^profiler step$' log)" -eq 6 ]
	[ "$(grep '^forward\|^backward' log | sort | uniq -c | awk '{ print $1, $2, $3 }')" = "6 backward sync=0
6 backward sync=1
6 forward sync=0
6 forward sync=1" ]
	[ "$(grep -A1 '^range microbatch_0/forward$' log | grep -c '^forward sync=0$')" -eq 6 ]
}

@test "COLLECTING: the shell snippets run on the traces of a job, named as the recipe names them" {
	need_traces
	[ "$(blocks sh sh)" -ge 1 ]
	# the DLRM job's 8 ranks as the recipe's files
	mkdir traces
	for r in 0 1 2 3 4 5 6 7; do
		cp "$TRACES"/param_dlrm_8rank_v100/kineto/worker${r}_*.pt.trace.json.gz \
		    "traces/rank0000$r.1700000000000.pt.trace.json.gz"
	done
	for f in sh-*; do
		run -0 --separate-stderr sh -e "$f"
	done
	# the last: graphstat's rows for the 8 ranks merged (a job row)
	[[ $output == *$'\n'"job "* ]]
	[ "$(graphcat job.kg | head -1 | jq -c .ranks)" = "[0,1,2,3,4,5,6,7]" ]
}
