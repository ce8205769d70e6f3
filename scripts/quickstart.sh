#!/usr/bin/env bash
#
# quickstart.sh — the first command to run: installs what is missing, builds
# keyplan, and runs it on a bundled example. Needs no database server.
#
#   scripts/quickstart.sh
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

example=examples/saas-control-plane/model.json
[[ -f $example ]] ||
    kp_die "the bundled example $example is missing from this checkout; nothing to run keyplan on"

kp_section "1/3 dependencies (scripts/deps.sh)"
scripts/deps.sh

kp_section "2/3 build (scripts/build.sh)"
scripts/build.sh build

kp_section "3/3 keyplan check $example"
status=0
./build/keyplan check "$example" || status=$?
if [[ $status -ne 0 ]]; then
    kp_die "keyplan check $example exited with status $status" "$status"
fi
kp_log "done: keyplan is built at build/keyplan; see README.md for the other commands"
