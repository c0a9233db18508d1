#!/usr/bin/env bash
# The recordings a lent GPU machine is for, in one run, within a deadline.
#
#   scripts/device-record.sh [-n] OUTDIR SECONDS ITEM...
#
# (OUTDIR is taken from the repository's root: give it absolute, as the
# device tool's $OUT is)
#
# runs the ITEMs in the order given, each with what is left of SECONDS
# (an item that would start with less than a minute left is skipped and
# said so), each's output under OUTDIR/ITEM and its log in
# OUTDIR/ITEM.log, a line for each in OUTDIR/items.txt (the item, its
# exit status, its seconds). A failed item does not stop the others:
# what one records is kept whatever the next does. -n prints the
# commands instead of running them. PYTHON (default python3) runs the
# scripts; REC_DIR (default .rec) holds record.py and kernels.jsonl.
#
# ITEMs (data/gpu/README.md says what each recorded last time and what
# the open issues want of it):
#   ops     scripts/record-op-sweep.py: the profiled op sweep (~40 s)
#   cool    the same with the GEMMs of .rec/kernels.jsonl, each shape
#           after 100 ms idle (a cool GPU, ~3 min)
#   cis     scripts/clock-in-step.py: gptB steps with the clock (~100 s)
#   dyn     scripts/clock-dynamics.py (~90 s)
#   big layers micro hidden ...
#           ../shared/gpu/record.py's parts (gptB 4 to 32 layers: big;
#           gpt 2 to 24 layers: layers; and so on)
#
# The machine gets the repository only: copy record.py (and, for cool,
# the GPU's kernels.jsonl) into the ignored folder .rec first, and carry
# it (the device tool's carry [".rec"]):
#
#   mkdir -p .rec && cp ../shared/gpu/record.py .rec/ &&
#       cp ../shared/gpu/kernels/h100/kernels.jsonl .rec/ &&
#       grep -qx /.rec/ .git/info/exclude || echo /.rec/ >> .git/info/exclude
#
# then, on the machine: scripts/device-record.sh "$OUT" 540 ops cis big
set -u
cd "$(dirname "$0")/.." || exit 2
dry=0
if [ "${1:-}" = -n ]; then
	dry=1
	shift
fi
if [ $# -lt 3 ]; then
	echo "usage: scripts/device-record.sh [-n] OUTDIR SECONDS ITEM..." >&2
	exit 2
fi
out=$1 budget=$2
shift 2
case $budget in
'' | *[!0-9]*)
	echo "device-record.sh: SECONDS must be a whole number, not '$budget'" >&2
	exit 2
	;;
esac
dir=${REC_DIR:-.rec}
rec=$dir/record.py
py=${PYTHON:-python3}
need() { # FILE ITEM: the item's input is there (or a dry run)
	[ -f "$1" ] || [ $dry = 1 ] || {
		echo "device-record.sh: $2 needs $1 (see the comment at the top)" >&2
		exit 2
	}
}
for item; do
	case $item in
	ops | dyn) ;;
	cool) need "$dir/kernels.jsonl" "$item" ;;
	cis | layers | hidden | micro | shape | variants | big | cross | memory | extra | kernels)
		need "$rec" "$item" ;;
	*)
		echo "device-record.sh: unknown item '$item'" >&2
		exit 2
		;;
	esac
done
[ $dry = 1 ] || mkdir -p "$out"
start=$(date +%s)
for item; do
	left=$((budget - ($(date +%s) - start)))
	case $item in
	ops) cmd=("$py" scripts/record-op-sweep.py "$out/ops") ;;
	cool) cmd=("$py" scripts/record-op-sweep.py --gemms "$dir/kernels.jsonl" --gap-ms 100 "$out/cool") ;;
	cis) cmd=("$py" scripts/clock-in-step.py "$rec" "$out/cis") ;;
	dyn) cmd=("$py" scripts/clock-dynamics.py "$out/dyn") ;;
	*) cmd=("$py" "$rec" "$out/$item" "$item") ;;
	esac
	if [ $dry = 1 ]; then
		echo "timeout -s INT -k 20 $left ${cmd[*]}"
		continue
	fi
	if [ "$left" -lt 60 ]; then
		echo "$item skipped: ${left} s left" | tee -a "$out/items.txt"
		continue
	fi
	t0=$(date +%s)
	# SIGINT: Python unwinds, and the scripts stop their nvidia-smi
	timeout -s INT -k 20 "$left" "${cmd[@]}" > "$out/$item.log" 2>&1
	rc=$?
	echo "$item rc=$rc $(($(date +%s) - t0)) s" | tee -a "$out/items.txt"
done
exit 0
