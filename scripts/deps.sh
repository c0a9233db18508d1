#!/bin/sh
# Install the Debian packages kgraph's build and tests need, if missing.
# As root it runs apt-get; otherwise it prints the command and fails.
set -eu

pkgs="gcc make pkg-config libmsgpack-dev libzstd-dev libxxhash-dev \
libyajl-dev zlib1g-dev bats jq python3 perl zstd mandoc xxhash librsvg2-bin \
libxgboost-dev"
# `deps.sh fuzz` (make fuzz-deps): clang and its libFuzzer for make fuzz;
# `deps.sh viewer`: Chromium and Node.js for the viewer test
# (tests/viewer.bats; .ci/run installs them, the demo does not need them);
# `deps.sh slurm`: Slurm and munge for the test of pipelines/ on Slurm
# (tests/pipelines-slurm.bats starts a one-node cluster; .ci/run).
if [ "${1:-}" = fuzz ]; then
	pkgs="clang libclang-rt-14-dev"
elif [ "${1:-}" = viewer ]; then
	pkgs="chromium nodejs"
elif [ "${1:-}" = slurm ]; then
	pkgs="slurm-wlm munge"
fi

missing=
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "deps: all present"
	exit 0
fi
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing:$missing" >&2
	echo "deps: run as root: apt-get update && $cmd" >&2
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
