#!/usr/bin/env bash
# The release binary as deploy/Dockerfile ships it: the Swift standard library, Dispatch and
# Foundation linked in (--static-swift-stdlib), by lld, with
#   - the functions a worker runs first laid out first (deploy/baton.order, made by
#     scripts/link-order.sh): the kernel maps an executable's pages 64 KB around each page it
#     faults in, so code spread over the whole 35 MB of text made an idle worker 37 MB resident;
#   - its relative relocations packed (-z pack-relative-relocs, glibc 2.36 or later at run time):
#     3.6 MB of relocation records the loader reads at every start shrink to ~30 KB.
# (A section per function, so that the order would move functions rather than each source file's
# code as a whole, measured no better.) SwiftPM does not see the order file as an input: after
# writing a new one, remove the binary to have it linked again.
# Idle `baton worker`, resident: 27.0–27.4 MB, against 35.6–35.9 MB linked as SwiftPM links by
# default; see docs/benchmarks.md, "The idle worker's resident memory".
#
#   scripts/build-static.sh [MORE SWIFT BUILD ARGUMENTS]    (prints the binary's path)
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-c release --product baton --static-swift-stdlib
    -Xswiftc -use-ld=lld
    -Xlinker -z -Xlinker pack-relative-relocs
    -Xlinker "--symbol-ordering-file=$PWD/deploy/baton.order" -Xlinker --no-warn-symbol-ordering)
swift build "${flags[@]}" "$@" >&2
echo "$(swift build "${flags[@]}" "$@" --show-bin-path)/baton"
