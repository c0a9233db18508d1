#!/usr/bin/env bats
# graphcat, and through it the stream codec's reader: the STYLE.md
# checklist, truncated and corrupt streams, versions.

load helpers

mkstream() { # JSON lines on stdin -> a graph stream on stdout
	"$ROOT/tests/tools/jsonl2kg" | zstd -q -c
}

setup_file() {
	kineto2graph -q "$ROOT/examples/ddp-step.json" > "$BATS_FILE_TMPDIR/ex.kg"
}

@test "graphcat: --help prints the usage on stdout and exits 0" {
	run -0 --separate-stderr graphcat --help
	[ "${lines[0]}" = "usage: graphcat [-r] [FILE ...]" ]
	[ -z "$stderr" ]
}

@test "graphcat: --version names the tool" {
	run -0 graphcat --version
	[[ $output == "graphcat (kgraph) "* ]]
}

@test "graphcat: an unknown option is a usage error" {
	run -2 --separate-stderr graphcat --bogus
	[ -z "$output" ]
	[[ ${stderr_lines[1]} == "usage: graphcat "* ]]
}

@test "graphcat: a missing file is named in the error" {
	run -1 --separate-stderr graphcat nosuch.kg
	[ "$stderr" = "graphcat: nosuch.kg: No such file or directory" ]
}

@test "graphcat: empty input is an error, not an empty stream" {
	run -1 --separate-stderr graphcat < /dev/null
	[ "$stderr" = "graphcat: -: empty input, not a graph stream" ]
}

@test "graphcat: garbage is not a graph stream" {
	printf 'hello world, not zstd\n' > junk
	run -1 --separate-stderr graphcat junk
	[ "$stderr" = "graphcat: junk: not a graph stream (no zstd frame)" ]
}

@test "graphcat: a stream cut inside a zstd frame is truncated" {
	head -c 100 "$BATS_FILE_TMPDIR/ex.kg" > cut.kg
	run -1 --separate-stderr graphcat cut.kg
	[ "$stderr" = "graphcat: cut.kg: truncated graph stream (ends inside a zstd frame)" ]
}

@test "graphcat: a stream cut inside a record is truncated" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" | "$ROOT/tests/tools/jsonl2kg" | head -c 300 | zstd -q -c > cut.kg
	run -1 --separate-stderr graphcat cut.kg
	[[ $stderr == "graphcat: cut.kg: truncated graph stream (ends inside record "*")" ]]
}

@test "graphcat: a section without its end record is truncated" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" | grep -v '"r":"end"' | mkstream > noend.kg
	run -1 --separate-stderr graphcat noend.kg
	[ "$stderr" = "graphcat: noend.kg: truncated graph stream (section ends without its end record)" ]
	# everything before the cut was still printed
	[ "${#lines[@]}" -gt 10 ]
}

@test "graphcat: a checksum mismatch is corruption" {
	cp "$BATS_FILE_TMPDIR/ex.kg" bad.kg
	size=$(stat -c %s bad.kg)
	# flip a byte in the middle of the compressed data
	printf '\x55' | dd of=bad.kg bs=1 seek=$((size / 2)) conv=notrunc status=none
	run -1 --separate-stderr graphcat bad.kg
	[[ $stderr == "graphcat: bad.kg: corrupt graph stream"* ]]
}

@test "graphcat: decompressing ahead on a thread or not, a file reads the same, whole or broken" {
	# Readers of a regular file decompress on a thread of their own
	# (common/zin.h); KG_READER_THREAD=0 keeps it on theirs. Both must
	# give the same records and the same message at the same place.
	need_traces
	kineto2graph -q "$TRACES"/param_dlrm_8rank_v100/kineto/*.json.gz > big.kg
	[ "$(python3 "$ROOT/tests/tools/zframes.py" big.kg | wc -l)" -gt 20 ]
	graphcat big.kg > a
	KG_READER_THREAD=0 graphcat big.kg > b
	cmp a b
	graph-deps --merge big.kg > job.kg
	graphsim job.kg > s1.kg
	KG_READER_THREAD=0 graphsim job.kg > s2.kg
	cmp s1.kg s2.kg
	size=$(stat -c %s big.kg)
	printf 'hello world, not zstd\n' > junk.kg
	: > empty.kg
	head -c $((size / 2)) big.kg > cut.kg
	cp big.kg flip.kg
	printf '\x55' | dd of=flip.kg bs=1 seek=$((size / 3)) conv=notrunc status=none
	graphcat big.kg > all.jsonl
	head -n $(($(wc -l < all.jsonl) / 2)) all.jsonl | "$ROOT/tests/tools/jsonl2kg" | zstd -q -c > rec.kg
	for f in junk empty cut flip rec; do
		run -1 --separate-stderr graphcat "$f.kg"
		out1=$output err1=$stderr
		KG_READER_THREAD=0 run -1 --separate-stderr graphcat "$f.kg"
		[ "$output" = "$out1" ] || { echo "$f: stdout differs"; false; }
		[ "$stderr" = "$err1" ] || { echo "$f: '$stderr' against '$err1'"; false; }
		[[ "$stderr" == "graphcat: $f.kg: "* ]]
	done
}

@test "graphcat: an unknown major version is refused" {
	echo '{"r":"header","format":"kgraph","major":2,"minor":0,"producer":"future","unit":"ns"}' | mkstream > v2.kg
	run -1 --separate-stderr graphcat v2.kg
	[ "$stderr" = "graphcat: v2.kg: unsupported graph stream version 2 (this reader knows 1)" ]
}

@test "graphcat: a record before the header is an error" {
	echo '{"r":"str","id":0,"s":"x"}' | mkstream > nohdr.kg
	run -1 --separate-stderr graphcat nohdr.kg
	[ "$stderr" = "graphcat: nohdr.kg: record 1: expected a header" ]
}

@test "graphcat: unknown fields and record types are passed over, not fatal" {
	mkstream > extra.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":7,"producer":"t","unit":"ns","future":[1,2]}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7,"color":"red"}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":5,"ts":0,"it":-1,"zzz":1}
	{"r":"hologram","x":1}
	{"r":"end","tasks":1,"edges":0,"procs":1,"strs":1}
	EOF
	run -0 --separate-stderr graphcat -r extra.kg
	[ "${#lines[@]}" -eq 5 ]
	[ "${lines[2]}" = '{"r":"task","id":0,"p":0,"k":"kern","n":"k","d":5,"ts":0,"it":-1,"zzz":1}' ]
	[ "${lines[3]}" = '{"r":"hologram","x":1}' ]
}

@test "graphcat: a missing required field names the record" {
	mkstream > miss.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"ts":0,"it":-1}
	EOF
	run -1 --separate-stderr graphcat miss.kg
	[ "$stderr" = "graphcat: miss.kg: record 4: missing field d" ]
}

@test "graphcat: a graph launch's edge prints its gl, and gl on an edge that is no launch is an error" {
	mkstream > gl.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":7,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"thread","pid":0,"tid":0}
	{"r":"proc","id":1,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"rt","n":0,"d":5,"ts":0,"it":-1}
	{"r":"task","id":1,"p":1,"k":"kern","n":0,"d":5,"ts":9,"it":-1}
	{"r":"task","id":2,"p":1,"k":"kern","n":0,"d":5,"ts":14,"it":-1}
	{"r":"edge","src":0,"dst":1,"k":"launch","gl":true}
	{"r":"edge","src":0,"dst":2,"k":"launch","gl":true}
	{"r":"edge","src":1,"dst":2,"k":"stream","gl":false}
	{"r":"end","tasks":3,"edges":3,"procs":2,"strs":1}
	EOF
	run -0 graphcat gl.kg
	[ "$(grep -c '"gl":true' <<<"$output")" = 2 ]
	[ "$(grep -c '"gl":false' <<<"$output")" = 1 ]
	sed 's/"k":"stream","gl":false/"k":"stream","gl":true/' > bad.jsonl <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":7,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":5,"ts":9,"it":-1}
	{"r":"task","id":1,"p":0,"k":"kern","n":0,"d":5,"ts":14,"it":-1}
	{"r":"edge","src":0,"dst":1,"k":"stream","gl":false}
	EOF
	mkstream < bad.jsonl > bad.kg
	run -1 --separate-stderr graphcat bad.kg
	[ "$stderr" = "graphcat: bad.kg: record 6: gl on a stream edge" ]
	sed 's/"gl":true/"gl":1/' bad.jsonl | mkstream > one.kg
	run -1 --separate-stderr graphcat one.kg
	[ "$stderr" = "graphcat: one.kg: record 6: field gl: expected a boolean" ]
}

@test "graphcat: end-record counts that disagree are corruption" {
	mkstream > count.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns"}
	{"r":"end","tasks":3,"edges":0,"procs":0,"strs":0}
	EOF
	run -1 --separate-stderr graphcat count.kg
	[ "$stderr" = "graphcat: count.kg: corrupt graph stream (section says 3 tasks, found 0)" ]
}

@test "graphcat: two concatenated streams read as two sections" {
	cat "$BATS_FILE_TMPDIR/ex.kg" "$BATS_FILE_TMPDIR/ex.kg" > two.kg
	run -0 graphcat two.kg
	[ "$(grep -c '"r":"header"' <<< "$output")" -eq 2 ]
	[ "$(grep -c '"r":"end"' <<< "$output")" -eq 2 ]
}

@test "graphcat: stdin gives the same output as a file operand" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" > a
	graphcat < "$BATS_FILE_TMPDIR/ex.kg" > b
	graphcat - < "$BATS_FILE_TMPDIR/ex.kg" > c
	cmp a b
	cmp a c
}

@test "graphcat: --resolve replaces string ids and drops str records" {
	run -0 graphcat -r "$BATS_FILE_TMPDIR/ex.kg"
	if grep -q '"r":"str"' <<< "$output"; then
		return 1
	fi
	grep -q '"n":"ampere_sgemm_128x64_tn"' <<< "$output"
}

@test "graphcat: each line is one JSON object" {
	graphcat "$BATS_FILE_TMPDIR/ex.kg" > out
	[ "$(jq -c . out | wc -l)" -eq "$(wc -l < out)" ]
}

@test "graphcat: a full disk is a write error" {
	run -1 --separate-stderr bash -c 'graphcat "$1" > /dev/full' _ "$BATS_FILE_TMPDIR/ex.kg"
	[[ $stderr == "graphcat: stdout: write error: "* ]]
}

@test "graphcat: a reader that stops early gets no complaint" {
	run -0 --separate-stderr bash -c "graphcat '$BATS_FILE_TMPDIR/ex.kg' | head -n 1"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
}

# --- MessagePack read in place (common/mp.c) -----------------------------

# The header record as MessagePack bytes (printf format), for hand-made
# streams whose later records jsonl2kg cannot write.
HDR='{"r":"header","format":"kgraph","major":1,"minor":1,"producer":"t","unit":"ns"}'

@test "graphcat: a byte that starts no MessagePack value is corruption" {
	{ echo "$HDR" | "$ROOT/tests/tools/jsonl2kg"; printf '\x81\xa1r\xc1'; } | zstd -q -c > bad.kg
	run -1 --separate-stderr graphcat bad.kg
	[ "$stderr" = "graphcat: bad.kg: corrupt graph stream (bad MessagePack in record 2)" ]
}

@test "graphcat: a record that is not a map, or has a key that is not a string, is an error" {
	{ echo "$HDR" | "$ROOT/tests/tools/jsonl2kg"; printf '\x93\x01\x02\x03'; } | zstd -q -c > arr.kg
	run -1 --separate-stderr graphcat arr.kg
	[ "$stderr" = "graphcat: arr.kg: record 2: not a map" ]
	{ echo "$HDR" | "$ROOT/tests/tools/jsonl2kg"; printf '\x82\xa1r\xa3str\x07\x01'; } | zstd -q -c > key.kg
	run -1 --separate-stderr graphcat key.kg
	[ "$stderr" = "graphcat: key.kg: record 2: key is not a string" ]
}

@test "graphcat: a value nested deeper than 64 is refused, one of 64 is not" {
	for depth in 63 65; do
		{
			echo "$HDR" | "$ROOT/tests/tools/jsonl2kg"
			printf '\x82\xa1r\xa5other\xa1x'
			for ((i = 0; i < depth; i++)); do printf '\x91'; done
			printf '\x01'
			echo '{"r":"end","tasks":0,"edges":0,"procs":0,"strs":0}' | "$ROOT/tests/tools/jsonl2kg"
		} | zstd -q -c > deep$depth.kg
	done
	run -0 graphcat deep63.kg
	[ "$(jq -c '.x | flatten' <<< "${lines[1]}")" = '[1]' ]
	run -1 --separate-stderr graphcat deep65.kg
	[ "$stderr" = "graphcat: deep65.kg: record 2: nested more than 64 deep" ]
}

@test "graphcat: the record type need not be the first key" {
	mkstream > late.kg <<-'EOF'
	{"format":"kgraph","major":1,"minor":0,"r":"header","producer":"t","unit":"ns"}
	{"s":"x","id":0,"r":"str"}
	{"tasks":0,"edges":0,"procs":0,"r":"end","strs":1}
	EOF
	run -0 graphcat -r late.kg
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[1]}" = '{"tasks":0,"edges":0,"procs":0,"r":"end","strs":1}' ]
}

@test "graphcat: every integer width and a float read back" {
	mkstream > ints.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":0,"producer":"t","unit":"ns","rank":-5,"xxh3":18446744073709551615,"tbase":-4611686018427387903}
	{"r":"zz","a":[-9223372036854775808,0,127,128,255,256,65535,65536,4294967295,4294967296,-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649],"f":0.5,"n":null,"b":[true,false]}
	{"r":"end","tasks":0,"edges":0,"procs":0,"strs":0}
	EOF
	# jsonl2kg writes integers as fixint or 64 bits; zz's with msgpack's
	# other widths are written by hand below
	run -0 graphcat ints.kg
	[[ ${lines[0]} == *'"rank":-5,'*'"xxh3":18446744073709551615,"tbase":-4611686018427387903}' ]]
	[ "${lines[1]}" = '{"r":"zz","a":[-9223372036854775808,0,127,128,255,256,65535,65536,4294967295,4294967296,-1,-32,-33,-128,-129,-32768,-32769,-2147483648,-2147483649],"f":0.5,"n":null,"b":[true,false]}' ]
	{
		echo "$HDR" | "$ROOT/tests/tools/jsonl2kg"
		# {"r":"zz","a":[uint8 200, uint16 513, uint32 65537, int8 -2,
		#  int16 -300, int32 -70000, int8 5 (non-negative), float32 1.5]}
		printf '\x82\xa1r\xa2zz\xa1a\x98\xcc\xc8\xcd\x02\x01\xce\x00\x01\x00\x01'
		printf '\xd0\xfe\xd1\xfe\xd4\xd2\xff\xfe\xee\x90\xd0\x05\xca\x3f\xc0\x00\x00'
		echo '{"r":"end","tasks":0,"edges":0,"procs":0,"strs":0}' | "$ROOT/tests/tools/jsonl2kg"
	} | zstd -q -c > widths.kg
	run -0 graphcat widths.kg
	[ "${lines[1]}" = '{"r":"zz","a":[200,513,65537,-2,-300,-70000,5,1.5]}' ]
}

@test "graphcat: a sim record's arrays must match the section's tasks" {
	mkstream > sim.kg <<-'EOF'
	{"r":"header","format":"kgraph","major":1,"minor":1,"producer":"t","unit":"ns"}
	{"r":"str","id":0,"s":"k"}
	{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
	{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":5,"ts":0,"it":-1}
	{"r":"sim","tasks":1,"makespan":5,"ss":[0,1],"se":[5,6]}
	{"r":"end","tasks":1,"edges":0,"procs":1,"strs":1}
	EOF
	run -1 --separate-stderr graphcat sim.kg
	[ "$stderr" = "graphcat: sim.kg: record 5: field ss: 2 times in a section of 1 tasks" ]
}

@test "graphcat: a sim record's steps and lengths (1.3) print as starts and ends, like 1.2's" {
	# three tasks: starts 100, 110, 105 (steps 100, 10, -5), lengths
	# 10, 10, 20 (ends 110, 120, 125)
	head3='{"r":"header","format":"kgraph","major":1,"minor":3,"producer":"t","unit":"ns"}
{"r":"str","id":0,"s":"k"}
{"r":"proc","id":0,"k":"stream","pid":0,"tid":7}
{"r":"task","id":0,"p":0,"k":"kern","n":0,"d":10,"ts":0,"it":-1}
{"r":"task","id":1,"p":0,"k":"kern","n":0,"d":10,"ts":0,"it":-1}
{"r":"task","id":2,"p":0,"k":"kern","n":0,"d":20,"ts":0,"it":-1}'
	end='{"r":"end","tasks":3,"edges":0,"procs":1,"strs":1}'
	printf '%s\n%s\n%s\n' "$head3" '{"r":"sim","tasks":3,"makespan":125,"ssd":[100,10,-5],"sd":[10,10,20]}' "$end" | mkstream > new.kg
	printf '%s\n%s\n%s\n' "$head3" '{"r":"sim","tasks":3,"makespan":125,"ss":[100,110,105],"se":[110,120,125]}' "$end" | mkstream > old.kg
	want='{"r":"sim","tasks":3,"makespan":125,"ss":[100,110,105],"se":[110,120,125]}'
	[ "$(graphcat new.kg | grep '"sim"')" = "$want" ]
	[ "$(graphcat old.kg | grep '"sim"')" = "$want" ]
	# one of a pair alone, or the forms mixed, is refused
	printf '%s\n%s\n%s\n' "$head3" '{"r":"sim","tasks":3,"makespan":125,"ssd":[100,10,-5],"se":[110,120,125]}' "$end" | mkstream > mixed.kg
	run -1 --separate-stderr graphcat mixed.kg
	[ "$stderr" = "graphcat: mixed.kg: record 7: sim record with ssd and se (1.3 writes ssd and sd, earlier ss and se)" ]
	printf '%s\n%s\n%s\n' "$head3" '{"r":"sim","tasks":3,"makespan":125,"ssd":[100,10,-5]}' "$end" | mkstream > alone.kg
	run -1 --separate-stderr graphcat alone.kg
	[[ $stderr == *"sd"* ]]
	# graphsim writes steps and lengths
	printf '%s\n%s\n' "$head3" "$end" | mkstream > bare.kg
	graphsim bare.kg | zstd -dc | grep -a -q '"*ssd'
	[ "$(graphsim bare.kg | graphcat | grep '"sim"')" = '{"r":"sim","tasks":3,"makespan":40,"ss":[0,10,20],"se":[10,20,40]}' ]
}
