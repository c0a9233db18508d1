# shellcheck shell=bash
# Sourced by bench/opmodel-accuracy and bench/opmodel-speed (K: the
# shared sweeps' folder). op_sweep GPU prints the profiled op sweep of
# GPU (scripts/record-op-sweep.py: attention, norms, elementwise,
# softmax, loss and AdamW with their kernels' true durations), or
# nothing: under KG_OP_SWEEPS (DIR/GPU/op_sweep.json.gz) when it is set,
# else beside the shared sweep, else data/gpu's
# (data/gpu/GPU/op_sweep.json.gz; data/gpu/README.md). bench/real-accuracy
# looks in the same places.
op_sweep() {
	local d
	for d in "${KG_OP_SWEEPS:-}" "$K" data/gpu; do
		if [ -n "$d" ] && [ -f "$d/$1/op_sweep.json.gz" ]; then
			echo "$d/$1/op_sweep.json.gz"
			return
		fi
	done
}
