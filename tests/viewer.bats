#!/usr/bin/env bats
# graph2chrome's export opened by a real viewer: speedscope (npm, in
# tests/viewer/node_modules: `npm ci --prefix tests/viewer`) under
# headless Chromium (Debian's chromium), driven by playwright-core
# (tests/viewer/speedscope.js). .ci/run installs both; elsewhere the
# tests skip, saying what is missing.

load helpers

VIEWER="$ROOT/tests/viewer"

need_viewer() {
	command -v node > /dev/null || skip "no node (apt-get install nodejs)"
	[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "no chromium (apt-get install chromium)"
	[ -d "$VIEWER/node_modules/speedscope" ] && [ -d "$VIEWER/node_modules/playwright-core" ] ||
		skip "no speedscope or playwright-core (npm ci --prefix tests/viewer)"
}

# Each track with events (a thread or stream of a rank) is a profile in
# speedscope; jq counts them in the export.
tracks() {
	jq '[.traceEvents[] | select(.ph == "X") | [.pid, .tid]] | unique | length' "$1"
}

# "NAME<TAB>NS" for each frame speedscope drew on the track whose tid is
# TID (graph2chrome's tid is the graph's proc id), from its export
# (speedscope.js's third argument): the name less the args speedscope
# appends to it, the duration from the times it computed.
viewer_durs() { # EXPORT TID
	jq -r --arg t "(tid $2)" '.shared.frames as $f | .profiles[] | select(.name | endswith($t)) |
		reduce .events[] as $e ({s: [], out: []};
			if $e.type == "O" then .s += [$e]
			else .out += [[$f[$e.frame].name, $e.at - .s[-1].at]] | .s |= .[:-1] end) |
		.out[] | "\(.[0] | sub(" [{]\".*$"; ""))\t\(.[1] * 1000 | round)"' "$1"
}

# The same from the graph: each simulated task of proc PROC that lasts.
graph_durs() { # GRAPH PROC
	graphcat -r "$1" | jq -rs --argjson p "$2" '(.[] | select(.r == "sim")) as $s |
		[.[] | select(.r == "task")] | to_entries[] | select(.value.p == $p) |
		[.value.n, $s.se[.key] - $s.ss[.key]] | select(.[1] > 0) | "\(.[0])\t\(.[1])"'
}

bynames() { # "NAME<TAB>NS" lines -> each name's total, sorted
	awk -F'\t' '{ s[$1] += $2 } END { for (k in s) print k "\t" s[k] }' | sort
}

@test "viewer: speedscope draws the DLRM job's events for as long as the graph says" {
	need_viewer
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge 2> /dev/null |
		graphsim > job.kg
	graph2chrome -o job.json job.kg
	run -0 --separate-stderr node "$VIEWER/speedscope.js" job.json - drawn.json
	# rank 0's GPU stream 7 (proc 2): kernels one after another, each
	# drawn for its simulated duration, to the nanosecond
	[ "$(graphcat -r job.kg | jq -c 'select(.r == "proc" and .id == 2) | [.k, .tid, .rank]')" = '["stream",7,0]' ]
	diff <(viewer_durs drawn.json 2 | sort) <(graph_durs job.kg 2 | sort)
	[ "$(graph_durs job.kg 2 | wc -l)" -gt 100 ]
	# rank 0's main thread (proc 0): speedscope joins an event to the
	# same one right after it, so each name's total is what must agree;
	# its 24 cudaPeekAtLastError of 0 ns are drawn not at all (a complete
	# event of 0 us was drawn as milliseconds)
	[ "$(graphcat -r job.kg | jq -c 'select(.r == "proc" and .id == 0) | [.k, .main, .rank]')" = '["thread",true,0]' ]
	diff <(viewer_durs drawn.json 0 | bynames) <(graph_durs job.kg 0 | bynames)
	[ "$(graphcat -r job.kg | jq -r 'select(.r == "task" and .p == 0 and .d == 0 and .n == "cudaPeekAtLastError") | .id' | wc -l)" -gt 0 ]
	[ "$(viewer_durs drawn.json 0 | grep -c '^cudaPeekAtLastError')" -eq 0 ]
	# one frame per call alike (name, operator, shapes), not per task:
	# fewer frames than launches
	launches=$(graphcat -r job.kg | jq -r 'select(.r == "task" and .n == "cudaLaunchKernel") | .id' | wc -l)
	[ "$(jq '[.shared.frames[] | select(.name | startswith("cudaLaunchKernel {"))] | map(.name) | unique | length' drawn.json)" -lt "$launches" ]
	# --args none: one frame a name, its total on rank 0's main thread
	# the graph's
	graph2chrome --args none -o bare.json job.kg
	run -0 --separate-stderr node "$VIEWER/speedscope.js" bare.json - bare-drawn.json
	[ "$(jq -c '[.shared.frames[] | select(.name | startswith("cudaLaunchKernel"))] | map(.name) | unique' bare-drawn.json)" = '["cudaLaunchKernel"]' ]
	diff <(viewer_durs bare-drawn.json 0 | bynames) <(graph_durs job.kg 0 | bynames)
}

@test "viewer: speedscope opens a simulated job's export with a profile per track, and draws it" {
	need_viewer
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz | graph-deps --merge 2> /dev/null |
		graphsim | graph2chrome -o job.json
	run -0 --separate-stderr node "$VIEWER/speedscope.js" job.json shot.png
	[ "$output" = "$(tracks job.json) job.json - speedscope" ]
	# 8 ranks, each with a main thread, a second thread and 4 streams,
	# all of which have tasks
	[ "$(tracks job.json)" -eq 48 ]
	# the screenshot is the 1200x700 viewport, drawn: the flame chart's
	# colours and anti-aliased labels make hundreds of pixel values
	read -r w h colours < <("$ROOT/tests/tools/pngstat" shot.png)
	[ "$w $h" = "1200 700" ]
	[ "$colours" -gt 100 ]
}

@test "viewer: speedscope opens a measured and simulated export of a one-rank trace" {
	need_viewer
	kineto2graph -q "$ROOT/examples/ddp-step.json" | graphsim | graph2chrome --both -o both.json
	run -0 --separate-stderr node "$VIEWER/speedscope.js" both.json
	# both views: twice the tracks of one
	n=$(tracks both.json)
	[ "$output" = "$n both.json - speedscope" ]
	[ $((n % 2)) -eq 0 ] && [ "$n" -ge 4 ]
}

# graphplot's pictures opened in Chromium: every text element (labels,
# ticks, legend, titles), laid out by the browser with its fonts, lies
# inside the picture (tests/viewer/svgfit.js).
@test "viewer: every kind of graphplot picture keeps all its text inside, long labels and titles too" {
	need_viewer
	kineto2graph -q "$ROOT/examples/ddp-step.json" | graphsim > g.kg
	graphstat --csv --util u.csv g.kg > s.csv
	graphstat --critical --csv g.kg > c.csv
	# a sweep with long column names and values, three iterations a point
	h=$(head -1 s.csv)
	{
		echo "dp,pipeline_schedule_name,hidden_size_of_the_model,$h"
		for d in 1 2 4 8; do
			for i in 1 2 3; do
				tail -1 s.csv | awk -F, -v OFS=, -v d=$d -v i=$i \
					'{ $1 = "job"; $2 = i; $4 = int($4 / d) + i * 1000; $6 = int($6 / d); print }' |
					sed "s/^/$d,interleaved-1f1b-with-a-long-name,16384,/"
			done
		done
	} > sw.csv
	graphplot -o b.svg s.csv
	graphplot -o u.svg u.csv
	graphplot -o c.svg c.csv
	graphplot -o sw.svg sw.csv
	graphplot --against dp -o sa.svg sw.csv
	graphplot --title "$(printf 'a title %.0s' {1..20})" -o t.svg sw.csv
	run -0 --separate-stderr node "$VIEWER/svgfit.js" b.svg u.svg c.svg sw.svg sa.svg t.svg
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 6 ]
	for l in "${lines[@]}"; do
		[[ $l == *" texts inside "* ]]
	done
	# the check can fail: a text left of the picture
	printf '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><text x="-40" y="20">cut off</text></svg>\n' > cut.svg
	run -1 node "$VIEWER/svgfit.js" cut.svg
	[[ $output == "cut.svg: outside: cut off ("* ]]
}
