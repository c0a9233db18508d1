#!/usr/bin/env bats
# tracegen: the checklist of STYLE.md for a tool that writes files; the
# job rules; determinism and --ranks; what the traces hold, read back with
# python3 and compared with the real 2024+ traces of ../shared/traces; and
# the traces through kineto2graph | graphsim | graphstat.
#
# The jobs are the tiny preset: tp 2, pp 2, dp 2 (8 ranks, ranks 0-3 on
# node 0 and 4-7 on node 1 with 4 GPUs a node), 4 layers (2 a stage),
# hidden 256, ffn 1024, 4 heads, seq 128, vocab 1024, micro-batch size 1,
# 4 micro-batches, 2 iterations. Ranks are tp_rank + 2 * (dp_rank + 2 *
# stage): stage 0 is ranks 0-3, stage 1 ranks 4-7.

load helpers

USAGE='usage: tracegen [-v] [--preset NAME] [--layers N] [--hidden N] [--ffn N] [--heads N] [--seq N] [--vocab N] [--mbs N] [--microbatches N] [--tp N] [--pp N] [--dp N] [--sequence-parallel] [--schedule 1f1b|gpipe] [--gpus-per-node N] [--hw NAME|FILE] [--iterations N] [--seed N] [--ranks LIST] [--no-sync-records] [--no-annotations] [--clock-skew US] [--profile-memory] [--recompute full|selective] [--jobs N] -d DIR'
TRY="Try 'tracegen --help' for more information."

same() {
	if [ "$1" != "$2" ]; then
		printf 'expected: %s\nactual:   %s\n' "$2" "$1"
		return 1
	fi
}

# tiny DIR [OPTION...]: the tiny job into DIR.
tiny() {
	local d=$1
	shift
	tracegen --preset tiny "$@" -d "$d"
}

# usage_error MESSAGE ARG...: tracegen ARG... exits 2 with MESSAGE, the
# usage and the hint on stderr, nothing on stdout, and writes no trace.
usage_error() {
	local msg=$1
	shift
	run -2 --separate-stderr tracegen "$@"
	same "$output" ""
	same "${stderr_lines[0]}" "tracegen: $msg"
	same "${stderr_lines[1]}" "$USAGE"
	same "${stderr_lines[2]}" "$TRY"
	same "${#stderr_lines[@]}" 3
	[ ! -e out ]
}

# The coverage counts kineto2graph prints for each file, one line each.
coverage() {
	kineto2graph -v "$@" 2>&1 >/dev/null | grep ': coverage:'
}

# Per-rank replay errors: "rank iteration error_pct" lines.
replay() {
	kineto2graph -q "$@" | graphsim | graphstat --csv |
		awk -F, 'NR > 1 { print $1, $2, $5 }'
}

# --- the checklist -----------------------------------------------------------

@test "tracegen: --help prints the usage line and every option on stdout and exits 0" {
	run -0 --separate-stderr tracegen --help
	same "${lines[0]}" "$USAGE"
	same "$stderr" ""
	local o
	for o in --dir --preset --layers --hidden --ffn --heads --seq --vocab --mbs \
		--microbatches --tp --pp --dp --sequence-parallel --schedule --gpus-per-node --hw --iterations \
		--seed --ranks --no-sync-records --no-annotations --profile-memory --recompute --jobs --verbose --help --version; do
		[[ $output == *"$o"* ]] || { echo "--help lacks $o"; return 1; }
	done
	local help=$output
	run -0 --separate-stderr tracegen -h
	same "$output" "$help"
}

@test "tracegen: the usage line is the man page's SYNOPSIS" {
	command -v mandoc >/dev/null || skip "no mandoc"
	local synopsis
	synopsis=$(mandoc -T ascii "$ROOT/doc/tracegen.1" | col -bx |
		awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
	same "usage: $synopsis" "$USAGE"
}

@test "tracegen: the man page is clean under mandoc -Tlint" {
	command -v mandoc >/dev/null || skip "no mandoc"
	run -0 --separate-stderr mandoc -Tlint -W warning "$ROOT/doc/tracegen.1"
	same "$output$stderr" ""
}

@test "tracegen: --version prints the version" {
	run -0 --separate-stderr tracegen --version
	same "$stderr" ""
	[[ $output =~ ^tracegen\ \(kgraph\)\ [0-9]+\.[0-9]+$ ]]
}

@test "tracegen: --help and --version to /dev/full exit 1 with a write error" {
	to_full() { tracegen "$@" >/dev/full; }
	run -1 --separate-stderr to_full --help
	same "$stderr" "tracegen: stdout: write error: No space left on device"
	run -1 --separate-stderr to_full --version
	same "$stderr" "tracegen: stdout: write error: No space left on device"
}

@test "tracegen: an unknown option, a missing argument or an operand exits 2 with the usage" {
	usage_error "unrecognized option '--bogus'" --bogus -d out
	usage_error "invalid option -- 'x'" -x -d out
	usage_error "option '--layers' requires an argument" -d out --layers
	usage_error "option requires an argument -- 'd'" -d
	usage_error "unexpected operand 'extra'" -d out extra
	usage_error "no output directory (-d DIR)" --preset tiny
}

@test "tracegen: a bad number exits 2 naming the option and its range" {
	local v
	for v in '' x 0 -1 +4 ' 4' 4x 0x4 4.0 4097; do
		usage_error "invalid --layers '$v' (1 to 4096)" --layers "$v" -d out
	done
	usage_error "invalid --mbs '1025' (1 to 1024)" --mbs 1025 -d out
	usage_error "invalid --tp '16385' (1 to 16384)" --tp 16385 -d out
	usage_error "invalid --gpus-per-node '0' (1 to 1024)" --gpus-per-node 0 -d out
	usage_error "invalid --iterations '1001' (1 to 1000)" --iterations 1001 -d out
	usage_error "invalid --jobs '0' (1 to 64)" --jobs 0 -d out
	usage_error "invalid --seed '-1' (0 to 18446744073709551615)" --seed -1 -d out
	usage_error "invalid --seed '18446744073709551616' (0 to 18446744073709551615)" \
		--seed 18446744073709551616 -d out
	usage_error "invalid --schedule 'pipedream' (1f1b or gpipe)" --schedule pipedream -d out
	usage_error "unknown preset 'huge' (tiny, small, gpt15b)" --preset huge -d out
	usage_error "unknown hardware profile 'b200' (h100, h200, a100, or a file)" \
		--hw b200 -d out
}

@test "tracegen: a job that does not divide as Megatron divides it exits 2" {
	usage_error "--heads 4 is not divisible by --tp 3" --preset tiny --tp 3 -d out
	usage_error "--layers 5 is not divisible by --pp 2" --preset tiny --layers 5 -d out
	usage_error "--hidden 250 is not divisible by --heads 4" --preset tiny --hidden 250 --ffn 1024 -d out
	usage_error "--seq 128 is not divisible by --tp 3 (--sequence-parallel)" --preset tiny --heads 3 --hidden 255 --ffn 1023 --vocab 1023 --tp 3 --sequence-parallel -d out
	usage_error "--ffn 1001 is not divisible by --tp 2" --preset tiny --ffn 1001 -d out
	usage_error "--vocab 1001 is not divisible by --tp 2" --preset tiny --vocab 1001 -d out
	usage_error "--tp 2 --pp 2 --dp 4097 make 16388 ranks, more than 16384" \
		--preset tiny --dp 4097 -d out
	# 8 ranks * (2 + 2) items * 65536 micro-batches * 1000 iterations * 50 ops.
	usage_error "a job of about 104857600000 GPU ops is too large (at most 300000000)" \
		--preset tiny --microbatches 65536 --iterations 1000 -d out
}

@test "tracegen: --ranks takes ranks and ranges of the job only" {
	local v
	for v in '' , 1, ,1 1-- 3-1 a 1-2-3 '1 2' 01234567890; do
		usage_error "invalid --ranks '$v' (ranks and ranges: 0,2,4-7)" --preset tiny --ranks "$v" -d out
	done
	usage_error "--ranks: rank 8 is not in a job of 8 ranks" --preset tiny --ranks 8 -d out
	usage_error "--ranks: rank 8 is not in a job of 8 ranks" --preset tiny --ranks 2-9 -d out
	run -0 --separate-stderr tracegen --preset tiny --ranks 7,0-1,1 -d out
	same "$(cd out && echo *)" "rank-0.json.gz rank-1.json.gz rank-7.json.gz"
}

@test "tracegen: a directory that cannot be made exits 1 naming it, and writes nothing" {
	touch file
	run -1 --separate-stderr tracegen --preset tiny -d file
	same "$output" ""
	same "$stderr" "tracegen: file: Not a directory"
	run -1 --separate-stderr tracegen --preset tiny -d file/sub
	same "$stderr" "tracegen: file/sub: Not a directory"
	run -1 --separate-stderr tracegen --preset tiny -d no/such/dir
	same "$stderr" "tracegen: no/such/dir: No such file or directory"
	[ ! -e no ]
}

@test "tracegen: a directory it may not write into exits 1, leaving nothing" {
	[ "$(id -u)" != 0 ] || skip "root writes anywhere"
	mkdir ro
	chmod 555 ro
	run -1 --separate-stderr tracegen --preset tiny --jobs 1 -d ro
	same "$stderr" "tracegen: ro/rank-0.json.gz: Permission denied"
	same "$(ls -A ro)" ""
}

@test "tracegen: a trace that cannot be put in place fails the run and leaves no trace file" {
	# rank-3.json.gz is a directory: ranks 0 to 2 are renamed into place
	# first, then the rename of rank 3 fails; all of them must go.
	mkdir -p out/rank-3.json.gz
	touch out/other
	run -1 --separate-stderr tracegen --preset tiny -d out
	same "$output" ""
	same "$stderr" "tracegen: out/rank-3.json.gz: Is a directory"
	same "$(cd out && ls -A)" "$(printf 'other\nrank-3.json.gz')"
}

@test "tracegen: a hardware profile file that is wrong exits 1 naming the line" {
	bad_hw() { # CONTENT MESSAGE
		printf '%s\n' "$1" > hw
		run -1 --separate-stderr tracegen --preset tiny --hw hw -d out
		same "$output" ""
		same "$stderr" "tracegen: hw: $2"
		[ ! -e out ]
	}
	bad_hw 'tflops 500
speed 9' "line 2: unknown key 'speed'"
	bad_hw '# comment

tflops fast' "line 3: bad value for tflops: 'fast'"
	bad_hw 'tflops 0' "line 1: bad value for tflops: '0'"
	bad_hw 'tflops -1' "line 1: bad value for tflops: '-1'"
	bad_hw 'sms 1.5' "line 1: bad value for sms: '1.5'"
	bad_hw 'tflops' "line 1: tflops has no value"
	bad_hw 'tflops 500
base a100' "line 2: base must come before other keys"
	bad_hw 'base b200' "line 1: unknown base profile 'b200' (h100, h200, a100)"
	bad_hw 'arch sm70' "line 1: arch is sm80 or sm90, not 'sm70'"
	bad_hw 'cc 9' "line 1: cc is MAJOR.MINOR, not '9'"
}

@test "tracegen: a hardware profile file changes the timings it names" {
	# Half the peak and a tenth of the memory bandwidth of an H100. The
	# tiny model's GEMMs are all launch floor; with hidden 4096 (QKV on 2
	# tensor-parallel ranks: 1024 x 6144 x 4096, 52 GFLOP, some 70 us at
	# 989 TFLOP/s) they are compute-bound, and the GEMM time nearly
	# doubles: more than 1.5 times.
	printf 'base h100\n# slower\ntflops 494.5\nmem_gbps 335\n' > slow.hw
	local big="--hidden 4096 --heads 32 --seq 1024"
	# shellcheck disable=SC2086
	tiny fast --ranks 0 $big
	# shellcheck disable=SC2086
	tiny slow --ranks 0 --hw slow.hw $big
	gemm_us() {
		zcat "$1" | python3 -c '
import json, sys
ev = json.load(sys.stdin)["traceEvents"]
print(sum(e["dur"] for e in ev if e.get("cat") == "kernel" and "gemm" in e["name"]))'
	}
	local f s
	f=$(gemm_us fast/rank-0.json.gz)
	s=$(gemm_us slow/rank-0.json.gz)
	awk -v f="$f" -v s="$s" 'BEGIN { exit !(s > 1.5 * f) }'
}

@test "tracegen: -v says what was written on stderr, nothing on stdout" {
	run -0 --separate-stderr tracegen --preset tiny --ranks 2-3 -v -d out
	same "$output" ""
	[[ $stderr =~ ^tracegen:\ out:\ 2\ of\ 8\ ranks,\ [0-9]+\ bytes\ of\ JSON$ ]]
	local n
	n=$(zcat out/rank-2.json.gz out/rank-3.json.gz | wc -c)
	same "$stderr" "tracegen: out: 2 of 8 ranks, $n bytes of JSON"
}

# --- determinism -------------------------------------------------------------

@test "tracegen: the same options and seed write the same bytes, another seed others" {
	tiny a
	tiny b --jobs 3
	tiny c --seed 2
	local r
	for r in 0 1 2 3 4 5 6 7; do
		cmp a/rank-$r.json.gz b/rank-$r.json.gz
		if cmp -s a/rank-$r.json.gz c/rank-$r.json.gz; then return 1; fi
	done
}

@test "tracegen: --ranks writes exactly the bytes the full job writes for those ranks" {
	tiny all
	tiny some --ranks 1,4-5 --jobs 1
	same "$(cd some && echo *)" "rank-1.json.gz rank-4.json.gz rank-5.json.gz"
	cmp all/rank-1.json.gz some/rank-1.json.gz
	cmp all/rank-4.json.gz some/rank-4.json.gz
	cmp all/rank-5.json.gz some/rank-5.json.gz
}

# --- what the traces hold ----------------------------------------------------

# check_job DIR TP DP: python3 reads every rank of the job in DIR and
# checks that the participants of each collective end it together: the
# k-th kernel of a process group ends at the same nanosecond on every
# member, and the k-th kernel on a rank's stream to the next stage (29)
# ends with the k-th on the next stage's stream from the previous (25).
# Prints "N collectives".
check_job() {
	python3 - "$@" <<-'EOF'
	import collections, glob, gzip, json, sys
	from decimal import Decimal
	d, tp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	ns = lambda v: int(v * 1000)
	K = {}
	for f in sorted(glob.glob(d + "/rank-*.json.gz")):
	    t = json.loads(gzip.open(f).read(), parse_float=Decimal)
	    ks = collections.defaultdict(list)
	    for e in t["traceEvents"]:
	        if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel_"):
	            a = e["args"]
	            p2p = a["Collective name"] in ("send", "recv")
	            key = ("stream", a["stream"]) if p2p else ("pg", a["Process Group Name"])
	            ks[key].append((ns(e["ts"]), ns(e["ts"] + e["dur"])))
	    K[t["distributedInfo"]["rank"]] = ks
	n = 0
	groups = collections.defaultdict(dict)
	for r, ks in K.items():
	    for key, v in ks.items():
	        if key[0] == "pg":
	            groups[key[1]][r] = v
	for pg, per in groups.items():
	    counts = {len(v) for v in per.values()}
	    assert len(counts) == 1, (pg, counts)
	    for k in range(counts.pop()):
	        ends = {per[r][k][1] for r in per}
	        starts = {per[r][k][0] for r in per}
	        assert len(ends) == 1, (pg, k, ends)
	        assert max(starts) < ends.pop(), (pg, k)
	        n += 1
	for r in K:
	    q = r + tp * dp
	    if q in K and ("stream", 29) in K[r]:
	        a, b = K[r][("stream", 29)], K[q][("stream", 25)]
	        assert len(a) == len(b), (r, q)
	        for x, y in zip(a, b):
	            assert x[1] == y[1], (r, q, x, y)
	            n += 1
	print(n, "collectives")
	EOF
}

@test "tracegen: all the participants of a collective end it together" {
	tiny job
	run -0 check_job job 2 2
	# Collectives per iteration, by process group, for each group once:
	# 4 tensor-parallel groups (ranks 0-1, 2-3 on stage 0; 4-5, 6-7 on
	# stage 1): stage 0 per micro-batch 1 broadcast + 1 embedding + 2
	# layers * 2 forward + 2 layers * 2 backward = 10, stage 1: 1 + 4 + 3
	# cross-entropy + 1 head backward + 4 = 13; 4 data-parallel groups: 1
	# bucket a stage (under 40M parameters) + on stage 1 a loss all-reduce a
	# micro-batch; 2 model-parallel groups: 1 grad norm. Pipeline pairs
	# (4 of them): 4 sends forward + 4 backward.
	# (2 * 10 * 4 + 2 * 13 * 4) + (2 * 1 + 2 * (1 + 4)) + 2 + 4 * 8 = 230
	# a iteration, 460 for two.
	same "$output" "460 collectives"
	tiny gp --schedule gpipe --seed 7
	run -0 check_job gp 2 2
	same "$output" "460 collectives"
	tracegen --preset tiny --tp 1 --dp 4 --pp 2 --gpus-per-node 2 -d mix
	run -0 check_job mix 1 4
}

@test "tracegen: a group across nodes takes longer than the same group within one" {
	# The transfer time of a collective is its common end minus its last
	# arrival. With 8 GPUs a node the tensor-parallel pairs talk over
	# NVLink; with 1 a node, over the network (45 GB/s against 360, 4.5 us
	# a step against 1).
	xfer() {
		python3 - "$1" <<-'EOF'
		import collections, glob, gzip, json, sys
		from decimal import Decimal
		inst = collections.defaultdict(list)
		for f in sorted(glob.glob(sys.argv[1] + "/rank-[01].json.gz")):
		    seen = collections.Counter()
		    for e in json.loads(gzip.open(f).read(), parse_float=Decimal)["traceEvents"]:
		        a = e.get("args", {})
		        if e.get("cat") == "kernel" and a.get("Process Group Description") == "TENSOR_MODEL_PARALLEL_GROUP" \
		                and a.get("Collective name") == "allreduce" and a.get("dtype") == "BFloat16":
		            k = seen[0]; seen[0] += 1
		            inst[k].append((e["ts"], e["ts"] + e["dur"]))
		x = [max(v)[1] - max(s for s, _ in v) for v in inst.values()]
		print(sum(x) / len(x))
		EOF
	}
	tiny intra --gpus-per-node 8 --ranks 0-1
	tiny inter --gpus-per-node 1 --ranks 0-1
	local a b
	a=$(xfer intra)
	b=$(xfer inter)
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > 2 * a) }'
}

@test "tracegen: each rank's trace names its rank, devices, threads and streams" {
	tiny job
	python3 - <<-'EOF'
	import gzip, json
	for r in range(8):
	    t = json.load(gzip.open("job/rank-%d.json.gz" % r))
	    assert t["distributedInfo"]["rank"] == r and t["distributedInfo"]["world_size"] == 8
	    assert t["baseTimeNanoseconds"] > 0 and t["schemaVersion"] == 1
	    assert len(t["deviceProperties"]) == 4
	    ev = t["traceEvents"]
	    gpu = {(e["pid"], e["tid"]) for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
	    # Device r % 4; streams: compute 7, tensor- 13, data- 17 and
	    # model-parallel 21; 29 to the next stage (stage 0), 25 from the
	    # previous (stage 1).
	    want = {7, 13, 17, 21, 29 if r < 4 else 25}
	    assert gpu == {(r % 4, s) for s in want}, (r, gpu)
	    names = {e["args"]["name"] for e in ev if e.get("name") == "thread_name" and e["pid"] != r % 4}
	    pid = 2900000 + 131 * r
	    assert names == {"thread %d (pt_main_thread)" % pid, "thread %d (pt_autograd_0)" % (pid + 17)}, names
	    steps = [e["name"] for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
	    assert sorted(steps) == ["ProfilerStep#10", "ProfilerStep#11"], steps
	EOF
}

@test "tracegen: annotations and cuda_sync records are there unless turned off" {
	tiny on --ranks 0,4
	tiny off --ranks 0,4 --no-annotations --no-sync-records
	count() { # FILE CATEGORY NAME-REGEX
		zcat "$1" | python3 -c '
import json, re, sys
ev = json.load(sys.stdin)["traceEvents"]
print(sum(1 for e in ev if e.get("cat") == sys.argv[1] and re.fullmatch(sys.argv[2], e["name"])))' "$2" "$3"
	}
	# 4 micro-batches * 2 iterations = 8 forward and 8 backward steps; 2
	# layers a stage: 16 of each layer range, layers 0-1 on stage 0, 2-3 on
	# stage 1.
	same "$(count on/rank-0.json.gz user_annotation 'microbatch_[0-3]/forward')" 8
	same "$(count on/rank-0.json.gz user_annotation 'microbatch_[0-3]/backward')" 8
	same "$(count on/rank-0.json.gz user_annotation 'layer_[01]/forward')" 16
	same "$(count on/rank-0.json.gz user_annotation 'layer_[01]/backward')" 16
	same "$(count on/rank-4.json.gz user_annotation 'layer_[23]/backward')" 16
	same "$(count on/rank-4.json.gz user_annotation 'layer_.*')" 32
	# A wait for every cudaStreamWaitEvent, two syncs an iteration.
	same "$(count on/rank-0.json.gz cuda_sync 'Stream Wait Event')" \
		"$(count on/rank-0.json.gz cuda_runtime cudaStreamWaitEvent)"
	same "$(count on/rank-0.json.gz cuda_sync 'Stream Sync|Context Sync')" 4
	same "$(count off/rank-0.json.gz user_annotation '(microbatch|layer)_.*')" 0
	same "$(count off/rank-0.json.gz cuda_sync '.*')" 0
	same "$(count off/rank-0.json.gz user_annotation 'ProfilerStep#1[01]')" 2
	# The same program either way: as many kernels.
	same "$(count off/rank-4.json.gz kernel '.*')" "$(count on/rank-4.json.gz kernel '.*')"
}

@test "tracegen: categories and argument keys are those of the real 2024+ traces" {
	need_traces
	tiny job --ranks 0,4
	python3 - "$TRACES" <<-'EOF'
	import collections, gzip, json, sys
	def keys(files):
	    u = collections.defaultdict(set)
	    top = set()
	    for f in files:
	        t = json.load(gzip.open(f))
	        top |= set(t)
	        for e in t["traceEvents"]:
	            c = e.get("cat", "ph=" + e.get("ph", "?"))
	            u[c] |= {"." + k for k in e} | set(e.get("args", {}))
	    return top, u
	T = sys.argv[1] + "/"
	real_top, real = keys([T + p for p in (
	    "hta_ddp_2rank_a100_nccl_meta/nccl_data.json.gz",
	    "tracelens_h100_single/gaunernst_bert-small-uncased__1016001.json.gz",
	    "hta_v100_pt2_ns_resolution/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
	    "hta_small_unit/cuda_event_sync/event_sync_trace.json.gz",
	    "hta_small_unit/cuda_event_sync_multi_stream/event_sync_trace.json.gz")])
	gen_top, gen = keys(["job/rank-0.json.gz", "job/rank-4.json.gz"])
	# Nothing the real traces do not have.
	assert gen_top <= real_top, gen_top - real_top
	for c in gen:
	    assert c in real, c
	    assert gen[c] <= real[c], (c, gen[c] - real[c])
	# Everything they have, in the categories the tools read, but for
	# what other software writes: the CUDA driver API (Triton), Python
	# tracing, memory events, and c10d's older "Process Group ID".
	for c in real:
	    if c in ("cuda_driver", "python_function", "cpu_instant_event"):
	        continue
	    assert c in gen, c
	    assert real[c] - gen[c] <= {"Process Group ID"}, (c, real[c] - gen[c])
	EOF
}

# --- through kineto2graph, graphsim and graphstat -----------------------------

# full_coverage: every coverage line on stdin shows no launch without its
# work, no work without its launch, no wait or sync left unbound, no
# field missing, and every NCCL kernel with its metadata and size.
full_coverage() {
	awk '
	{ n++; delete c
	  for (i = 4; i <= NF; i++) { split($i, kv, "="); c[kv[1]] = kv[2] }
	  for (k in c) if (k ~ /^missing:/) { print "line " n ": " k; bad = 1 }
	  if (c["launch_unjoined"] || c["launch_nogpu"] || c["wait_unresolved"] || c["sync_unbound"]) {
	      print "line " n ": unbound work: " $0; bad = 1 }
	  if (c["tasks_coll"] == 0 || c["coll_meta"] != c["tasks_coll"] || c["coll_bytes"] != c["tasks_coll"]) {
	      print "line " n ": collectives without metadata: " $0; bad = 1 }
	  if (c["sync_bound"] != 4) { print "line " n ": sync_bound " c["sync_bound"]; bad = 1 }
	}
	END { exit bad || n != 8 }'
}

@test "tracegen: kineto2graph takes every rank whole, with and without cuda_sync records and annotations" {
	local opt
	for opt in "" --no-sync-records --no-annotations "--no-sync-records --no-annotations"; do
		rm -rf job
		# shellcheck disable=SC2086
		tiny job $opt
		coverage job/*.json.gz > cov
		full_coverage < cov
		# Waits are explicit with cuda_sync records, inferred without.
		if [[ $opt == *--no-sync-records* ]]; then
			if grep -q 'wait_explicit=' cov; then return 1; fi
			same "$(grep -c 'wait_inferred=' cov)" 8
		else
			if grep -q 'wait_inferred=' cov; then return 1; fi
			same "$(grep -c 'wait_explicit=' cov)" 8
		fi
	done
	# The collective kernels by hand: rank 0, stage 0, per micro-batch 1
	# broadcast + 1 embedding + 4 forward + 4 backward all-reduces, and
	# 8 sends and receives, 1 bucket and 1 grad norm an iteration:
	# 2 * (4 * 10 + 8 + 2) = 100. Rank 4, stage 1: 2 * (4 * (1 + 4 + 3 +
	# 1 + 1 + 4) + 8 + 2) = 132.
	grep -q 'rank-0.json.gz: coverage: .* tasks_coll=100 ' cov
	grep -q 'rank-4.json.gz: coverage: .* tasks_coll=132 ' cov
}

@test "tracegen: every rank replays within 1% where cross-stream waits cost no GPU time" {
	# event_us 0: an op that waits for another stream starts as soon as
	# what it waits for ends, plus nothing. See the next test for why.
	printf 'base h100\nevent_us 0\n' > hw
	local opt
	for opt in "" --no-sync-records --no-annotations "--no-sync-records --no-annotations" \
		"--schedule gpipe"; do
		rm -rf job
		# shellcheck disable=SC2086
		tiny job --hw hw $opt
		replay job/*.json.gz > err
		same "$(wc -l < err)" 16
		awk '{ e = $3 < 0 ? -$3 : $3; if (e > 1) { print "rank " $1 " iteration " $2 ": " $3 "%"; bad = 1 } }
			END { exit bad }' err
	done
}

@test "tracegen: every rank replays within 1% on the default hardware" {
	# h100: 1.5 us after each cross-stream wait, kept by kineto2graph's
	# rule 6 on the event edges; both the explicit and the inferred path
	local opt
	for opt in "" "--no-sync-records --no-annotations" "--schedule gpipe"; do
		rm -rf job
		# shellcheck disable=SC2086
		tiny job $opt
		replay job/*.json.gz > err
		awk '{ e = $3 < 0 ? -$3 : $3; if (e > 1) { print "rank " $1 " iteration " $2 ": " $3 "%"; bad = 1 } }
			END { exit bad }' err
	done
}

@test "tracegen: the small job (tp 2, pp 2, dp 2, 1F1B) replays within 1%, rank by rank and merged" {
	tracegen --preset small -d job
	replay job/*.json.gz > err
	same "$(wc -l < err)" 16
	awk '{ e = $3 < 0 ? -$3 : $3; if (e > 1) { print "rank " $1 " iteration " $2 ": " $3 "%"; bad = 1 } }
		END { exit bad }' err
	# merged: every collective a rendezvous across its ranks
	kineto2graph -q job/*.json.gz | graph-deps --merge > job.kg
	[ "$(cov coll_unmatched job.kg)" = 0 ]
	graphsim job.kg | graphstat --csv | awk -F, 'NR > 1 { print $1, $2, $5 }' > err
	same "$(wc -l < err)" 18
	awk '{ e = $3 < 0 ? -$3 : $3; if (e > 1) { print "rank " $1 " iteration " $2 ": " $3 "%"; bad = 1 } }
		END { exit bad }' err
}

@test "tracegen: kineto2graph tags layers and micro-batches from the annotations, and only the phase without" {
	# tiny: 4 layers over 2 stages, rank 0 holds layers 0 and 1; with
	# annotations its tasks carry those layers; without, only the
	# backward thread's phase is left to infer
	tiny job --ranks 0
	kineto2graph -q job/rank-0.json.gz > a.kg
	[ "$(cov tag_layer a.kg)" -gt 0 ]
	[ "$(cov tag_mb a.kg)" -gt 0 ]
	[ "$(graphcat a.kg | jq -c -s '[.[] | select(.r == "task" and .ly != null) | .ly] | unique')" = "[0,1]" ]
	rm -rf job
	tiny job --ranks 0 --no-annotations
	kineto2graph -q job/rank-0.json.gz > b.kg
	[ "$(cov tag_layer b.kg)" = 0 ]
	[ "$(cov tag_mb b.kg)" = 0 ]
	[ "$(cov tag_phase_inferred b.kg)" -gt 0 ]
}

@test "tracegen: --clock-skew moves each rank's clock; the merge finds the offsets and the job still replays" {
	tiny job --clock-skew 500
	# the true offsets: each rank's baseTimeNanoseconds less rank 0's
	want=$(for r in 0 1 2 3 4 5 6 7; do
		gzip -dc "job/rank-$r.json.gz" | python3 -c 'import json, sys; print(json.load(sys.stdin)["baseTimeNanoseconds"])'
	done | python3 -c 'import sys; v = [int(x) for x in sys.stdin]; print(",".join(str(x - v[0]) for x in v))')
	[ "$want" != "0,0,0,0,0,0,0,0" ]
	kineto2graph -q job/*.json.gz | graph-deps --merge > job.kg
	got=$(graphcat job.kg | head -n 1 | python3 -c 'import json, sys; print(",".join(str(x) for x in json.load(sys.stdin)["clk"]))')
	same "$got" "$want"
	graphsim job.kg | graphstat --csv | awk -F, 'NR > 1 { print $1, $2, $5 }' > err
	awk '{ e = $3 < 0 ? -$3 : $3; if (e > 1) { print "rank " $1 " iteration " $2 ": " $3 "%"; bad = 1 } }
		END { exit bad }' err
	run -2 --separate-stderr tracegen --clock-skew -1 -d x
	[ "${stderr_lines[0]}" = "tracegen: invalid --clock-skew '-1' (0 to 1000000000 us)" ]
}

@test "tracegen: --sequence-parallel: reduce-scatters and all-gathers for the all-reduces, norms on a shard" {
	# One rank of tp 2, 2 layers, one micro-batch. Without sequence
	# parallelism: 2 forward and 2 backward all-reduces a layer, the
	# embedding's and the output layer's input gradient's, the cross
	# entropy's 3 and the gradient norm's (model-parallel group, 2
	# ranks): 8 + 1 + 1 + 3 + 1 = 14, and the batch's broadcast.
	# With it, a layer's forward gathers before QKV and MLP up and
	# scatters after the projection and MLP down (2 + 2); its backward
	# gathers the output gradient before the projection's and MLP
	# down's (2) and, for QKV and MLP up, gathers the input again and
	# scatters the input gradient (2 + 2): 6 gathers and 4 scatters a
	# layer; the embedding scatters (forward) and gathers (backward),
	# the final norm's output is gathered, and the output layer's
	# backward gathers and scatters: 12 + 3 = 15 gathers, 8 + 2 = 10
	# scatters; the cross entropy and the norm keep their 4 all-reduces.
	# The norms run on 128 / 2 = 64 tokens.
	colls() {
		kineto2graph -q job/rank-0.json.gz | graphcat -r |
		    jq -r 'select(.r == "task" and .k == "coll") | .coll' | sort | uniq -c |
		    awk '{ printf "%s %s ", $2, $1 }'
	}
	norm() {
		kineto2graph -q job/rank-0.json.gz | graphcat -r |
		    jq -r 'select(.r == "task" and .op == "aten::native_layer_norm") | .sh' | sort -u
	}
	tiny job --pp 1 --dp 1 --layers 2 --microbatches 1 --iterations 1 --ranks 0
	same "$(colls)" "allreduce 14 broadcast 1 "
	same "$(norm)" "[[128,1,256],[],[256],[256],[]]"
	rm -rf job
	tiny job --pp 1 --dp 1 --layers 2 --microbatches 1 --iterations 1 --ranks 0 \
	    --sequence-parallel
	same "$(colls)" "allgather 15 allreduce 4 broadcast 1 reducescatter 10 "
	same "$(norm)" "[[64,1,256],[],[256],[256],[]]"
	# each moves the whole tensor of a layer: 128 x 256 bf16
	same "$(kineto2graph -q job/rank-0.json.gz | graphcat -r | jq -r 'select(.r == "task" and (.coll == "allgather" or .coll == "reducescatter")) | .by' | sort -u)" 65536
}

@test "tracegen: --profile-memory writes the allocator's events, and graphstat predicts each rank's peak from the graph as tracegen measures it" {
	# tiny (tp 2, pp 2, dp 1, 4 micro-batches, 1F1B). Stage 0: 2 layers
	# of 395648 parameters each (tracegen's count) and the embedding's
	# 512 x 256 + 128 x 256: 955136; its state 14 x 955136. graphstat
	# counts the same from the ops' shapes, less the projection's and
	# fc2's biases (folded into dropout_add: no op shows them, 2 x 256 a
	# layer), so within 0.1%; the activations and gradients are the
	# events replayed.
	tracegen --preset tiny --dp 1 --profile-memory -d tg
	kineto2graph -q tg/*.json.gz | graph-deps --merge > job.kg
	run -0 --separate-stderr graphstat --csv job.kg
	awk -F, 'NR > 1 && $1 != "job" { n++
		if ($19 == "" || $21 < 0.999 * $19 || $21 > $19) exit 1 } END { exit n != 8 }' <<< "$output"
	# stage 0's state: (1 - 0.001) x 14 x 955136 <= its level before any event
	kineto2graph -q -o r0.kg tg/rank-0.json.gz
	[ "$(graphcat r0.kg | jq -s '[.[] | select(.r == "task" and .ma != null)] | min_by(.ts) | .ma - .mx')" -ge 13358000 ]
	# without the option, no event
	tracegen --preset tiny --dp 1 -d plain
	[ "$(kineto2graph -q plain/rank-0.json.gz | graphcat | jq -s '[.[] | select(.r == "task" and .ma != null)] | length')" = 0 ]
}

@test "tracegen: --recompute full runs each layer's forward again in its backward, keeping its input alone; selective the attention core" {
	# tiny, dp 1: rank 0 is stage 0, 2 layers; 4 micro-batches, 2
	# iterations: 16 layers' backward passes. A layer keeps s b h (10 +
	# 24 / t) = 128 x 256 x 22 = 720896 bytes; under full recomputation
	# its input alone, 128 x 256 x 2 = 65536, and its backward allocates
	# the other 655360 again in the forward ops it runs again there
	tracegen --preset tiny --dp 1 --profile-memory --recompute full -d full
	kineto2graph -q full/rank-0.json.gz > f.kg
	[ "$(cov tag_recompute_runs f.kg)" = 16 ]
	# the allocations: ph rc bytes, counted (the backward's frees aside)
	local got
	got=$(graphcat f.kg | jq -r 'select(.r == "task" and (.mn // 0) > 0 and .ph != "opt") |
	    "\(.ph) \(.rc // false) \(.mn)"' | sort | uniq -c | awk '$2 != "bwd" || $3 == "true"' | xargs)
	same "$got" "16 bwd true 655360 16 fwd false 65536"
	# the same job without: the forward's 720896, no recomputation
	tracegen --preset tiny --dp 1 --profile-memory -d plain
	kineto2graph -q plain/rank-0.json.gz > p.kg
	[ "$(cov tag_recompute p.kg)" = 0 ]
	[ "$(graphcat p.kg | jq -s '[.[] | select(.r == "task" and .ph == "fwd" and .mn == 720896)] | length')" = 16 ]
	# the recomputed work is the forward's: as many kernels as the
	# layers' forward launches, on every rank of the job
	[ "$(graphcat f.kg | jq -s '[.[] | select(.r == "task" and .k == "kern" and .rc)] | length')" = \
	  "$(graphcat f.kg | jq -s '[.[] | select(.r == "task" and .k == "kern" and .ph == "fwd" and .ly != null)] | length')" ]
	# selective: the attention's forward kernel alone, once a layer's backward
	tracegen --preset tiny --dp 1 --profile-memory --recompute selective -d sel
	kineto2graph -q sel/rank-0.json.gz > s.kg
	[ "$(cov tag_recompute_runs s.kg)" = 16 ]
	got=$(graphcat --resolve s.kg | jq -r 'select(.r == "task" and .k == "kern" and .rc) | .n' | sort | uniq -c | xargs)
	[[ "$got" == "16 "*flash_fwd* ]]
	[ "$(graphcat s.kg | jq -s '[.[] | select(.r == "task" and .k == "kern" and .rc)] | length')" = 16 ]
	# selective keeps what the job without keeps: flash attention's core
	# keeps nothing the layer's other ops do not
	[ "$(graphcat s.kg | jq -s '[.[] | select(.r == "task" and .ph == "fwd" and .mn == 720896)] | length')" = 16 ]
}

@test "tracegen: --recompute takes full or selective" {
	usage_error "invalid --recompute 'all' (full or selective)" --preset tiny --recompute all -d out
}

@test "tracegen: a pipeline's memory predicted from one stage by graph-scale-pp matches the pipeline tracegen writes, stage by stage" {
	# the same job at pp 1, rebuilt for pp 2 (1F1B: stage 0 holds two
	# micro-batches in flight, stage 1 one; GPipe: all four), against
	# tracegen's own pp 2 job: within 2% on every rank (the head is
	# tied in graphstat's count when one rank holds both it and the
	# embedding, untied in tracegen's: the pp 1 job is off by its 131072
	# parameters x 14 bytes, the split stages are not)
	tracegen --preset tiny --dp 1 --pp 1 --profile-memory -d p1
	kineto2graph -q p1/*.json.gz | graph-deps --merge > p1.kg
	for s in 1f1b gpipe; do
		tracegen --preset tiny --dp 1 --pp 2 --schedule $s --profile-memory -d "p2$s"
		kineto2graph -q "p2$s"/*.json.gz | graph-deps --merge | graphsim | graphstat --csv |
		    awk -F, 'NR > 1 && $1 != "job" { print $1, $19 }' | sort -u > "meas$s"
		graph-scale-pp -q 2 --schedule $s p1.kg | graphsim | graphstat --csv |
		    awk -F, 'NR > 1 && $1 != "job" { print $1, $21 }' | sort -u > "pred$s"
		join "meas$s" "pred$s" | awk '{ n++; e = ($3 - $2) / $2; if (e < -0.02 || e > 0.02) exit 1 }
			END { exit n != 4 }'
	done
	# 1F1B holds fewer micro-batches than GPipe on stage 0
	[ "$(awk '$1 == 0 { print $2 }' pred1f1b)" -lt "$(awk '$1 == 0 { print $2 }' predgpipe)" ]
}
