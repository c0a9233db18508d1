#!/usr/bin/env bats
# The scripts a lent GPU machine runs (scripts/), with a stand-in for
# Python: what they would run, in which order, and how a deadline and a
# failed recording are handled. The recordings themselves need a GPU.

load helpers

# A python3 that logs its arguments and sleeps or fails when asked.
stub_python() {
	cat > py <<'PY'
#!/bin/sh
echo "$*" >> "$BATS_TEST_TMPDIR/calls"
case "$*" in *record-op-sweep*fail*) exit 3 ;; esac
case "$*" in *clock-in-step*) sleep 2 ;; esac
exit 0
PY
	chmod +x py
	mkdir -p rec
	: > rec/record.py
	: > rec/kernels.jsonl
}

@test "device-record.sh: runs the items in order, each with what is left, and keeps going past a failure" {
	stub_python
	run -0 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" \
	    "$PWD/out" 600 ops cool cis big
	[ "$(cut -d' ' -f1,2 out/items.txt)" = "ops rc=0
cool rc=0
cis rc=0
big rc=0" ]
	# (run from the repository's root)
	[ "$(cat calls)" = "scripts/record-op-sweep.py $PWD/out/ops
scripts/record-op-sweep.py --gemms $PWD/rec/kernels.jsonl --gap-ms 100 $PWD/out/cool
scripts/clock-in-step.py $PWD/rec/record.py $PWD/out/cis
$PWD/rec/record.py $PWD/out/big big" ]
	# a failed item is logged, the next runs (the stub fails the op
	# sweep into a folder named fail)
	rm -rf out calls
	run -0 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" \
	    "$PWD/fail" 600 ops big
	[ "$(cut -d' ' -f1,2 fail/items.txt)" = "ops rc=3
big rc=0" ]
}

@test "device-record.sh: an item with less than a minute left is skipped; bad usage exits 2" {
	stub_python
	run -0 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" \
	    "$PWD/out" 61 cis ops
	[ "$(cut -d' ' -f1,2 out/items.txt)" = "cis rc=0
ops skipped:" ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" "$PWD/bad" 60
	[ "$output" = "usage: scripts/device-record.sh [-n] OUTDIR SECONDS ITEM..." ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" "$PWD/bad" 1m ops
	[ "$output" = "device-record.sh: SECONDS must be a whole number, not '1m'" ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/rec" "$ROOT/scripts/device-record.sh" "$PWD/bad" 60 opz
	[ "$output" = "device-record.sh: unknown item 'opz'" ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/none" "$ROOT/scripts/device-record.sh" "$PWD/bad" 60 big
	[ "$output" = "device-record.sh: big needs $PWD/none/record.py (see the comment at the top)" ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/none" "$ROOT/scripts/device-record.sh" "$PWD/bad" 60 ops cis
	[ "$output" = "device-record.sh: cis needs $PWD/none/record.py (see the comment at the top)" ]
	run -2 env PYTHON="$PWD/py" REC_DIR="$PWD/none" "$ROOT/scripts/device-record.sh" "$PWD/bad" 60 cool
	[ "$output" = "device-record.sh: cool needs $PWD/none/kernels.jsonl (see the comment at the top)" ]
	# nothing made when the arguments are refused
	[ ! -e bad ]
}

@test "bench/accuracy-doc.py: writes the summary and the notes from a run's pieces, every figure from them" {
	# A run's pieces, small and made by hand: two traces' replays, the
	# ablations, coverage, and one line of each other section.
	T=pieces
	mkdir -p "$T" out
	row() { echo "$1,0,1,1000000,$2,$3,0,0,0,0,0,0,0,0,50,50"; }
	{ row a.json.gz 1001000 0.1; row b.json.gz 998000 -0.2; } > "$T/base.csv"
	{ row a.json.gz 1100000 10; row b.json.gz 998000 -0.2; } > "$T/noevent.csv"
	cp "$T/base.csv" "$T/nosync.csv"
	cp "$T/base.csv" "$T/neither.csv"
	echo '"a.json.gz",1,0,0,0,0,0,0' > "$T/cov.csv"
	printf '### param_dlrm_8rank_v100: 8 ranks merged\n\nPer rank and iteration: mean absolute error 0.020%%, maximum 0.044%%.\n' > "$T/jobs.md"
	printf '**gptB:** 16 predictions, mean absolute error 2.16%%, max 8.11%% against the traced steps; 2.21%%, max 9.42%% against the steps measured without the profiler.\n' > "$T/real.md"
	printf '| dp 2 -> 4 | small | 10.0 | 10.5 | +5.00 |\n| dp 2 -> 2 | small | 10.0 | 10.0 | +0.00 |\n' > "$T/whatif.md"
	printf '#### Table 1: tp\n\n| from | to | measured ms | predicted ms | error %% |\n|---|---|---:|---:|---:|\n| tp 1 | tp 2 | 10 | 10.1 | +1.00 |\n| tp 2 | tp 1 | 10 | 9.7 | -3.00 |\n' > "$T/tp.md"
	printf '## Without the profiler\n\n**gpt, calibrated:** 10 predictions, mean absolute error 3.50%%, max 8.66%% (goal: mean 5.0%%, max 10%%).\n' > "$T/unprofiled.md"
	printf '## Micro-batch and sequence\n\n**op model, unprofiled:** 6 predictions, mean absolute error 4.80%%, max 11.18%% (goal: mean 5%%, max 10%%).\n' > "$T/batch.md"
	: > "$T/tags.md" ; : > "$T/comm.md"; : > "$T/opmodel.md"; : > "$T/clocks.md"; : > "$T/memory.md"
	run -0 python3 "$ROOT/bench/accuracy-doc.py" "$T" out/ACCURACY.md "commit x, a day, a machine"
	[ "$output" = "out/ACCURACY.md: 2 iterations, mean 0.150%, max 0.200%" ]
	grep -q '| replay of a traced iteration | real: 2 traces (0 of them AMD), 2 iterations | mean abs. error 0.150%, max 0.200% |' out/ACCURACY.md
	grep -q '| replay of a merged job | real: DLRM, 8 V100 ranks | mean absolute error 0.020%, maximum 0.044% |' out/ACCURACY.md
	grep -q '| what-if layers and micro-batches, gptB (GPU-bound) | real: H100 GPT traces | 16 predictions, mean 2.16%, max 8.11% |' out/ACCURACY.md
	# the identity dp 2 -> 2 left out: one prediction, 5%
	grep -q '| what-if dp, layers, pp | tracegen: small preset | mean 5.00%, max 5.00% over 1 |' out/ACCURACY.md
	grep -q '| what-if tp, Table 1: tp | tracegen | mean 2.00%, max 3.00% over 2 |' out/ACCURACY.md
	# without event edges a is 10% off: the mean of 10 and 0.2
	grep -q '| without `event` edges | 5.100 | 10.000 | +4.900 |' out/ACCURACY.md
	grep -q '| the step without the profiler, gpt (host-bound), calibrated by --step-time | real: H100 GPT traces | 10 what-ifs, mean 3.50%, max 8.66% | mean 5%, max 10% |' out/ACCURACY.md
	grep -q '| what-if micro-batch and sequence (graph-scale-batch), op model, host-bound gpt, without the profiler | real: H100 GPT traces | 6 predictions, mean 4.80%, max 11.18% | mean 5%, max 10% |' out/ACCURACY.md
	grep -q '^- \*\*op model, unprofiled:\*\* 6 predictions, mean absolute error 4.80%' out/ACCURACY.md
	for n in replay jobs real tracegen opmodel clocks memory unprofiled batch; do
		grep -q 'commit x, a day, a machine' "out/notes/accuracy-$n.md"
	done
}
