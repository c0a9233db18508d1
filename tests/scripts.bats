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
