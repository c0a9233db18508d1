# shellcheck shell=bash
# Sourced by bench/whatif-speed and bench/io-speed: job NAME
# TRACEGEN-OPTIONS... leaves the merged tracegen job in $T/NAME.kg. A job
# kept from an earlier run is made again when the tools that made it
# are newer than it: a stream written by an older kineto2graph can lack
# fields the current one writes (2026-11-27: the 15B job without `oc`,
# 7% smaller), and the tools would be timed on what no user has.
job() {
	local name=$1 b
	shift
	if [ -s "$T/$name.kg" ]; then
		for b in bin/tracegen bin/kineto2graph bin/graph-deps; do
			[ "$b" -nt "$T/$name.kg" ] && rm -f "$T/$name.kg"
		done
		[ -s "$T/$name.kg" ] && return
	fi
	rm -rf "$T/tr"
	bin/tracegen "$@" -d "$T/tr"
	bin/kineto2graph -q "$T"/tr/*.json.gz | bin/graph-deps --merge > "$T/$name.kg.tmp"
	mv "$T/$name.kg.tmp" "$T/$name.kg"
	rm -rf "$T/tr"
}
