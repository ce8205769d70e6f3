#!/usr/bin/env bash
#
# readme.sh BUILD_DIR — the README's live shell blocks against the local servers
# (tests/readme_check.sh live; the offline blocks run under ctest).
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
build=$(cd -- "${1:-$here/../../build}" && pwd)
exec bash "$here/../readme_check.sh" live "$build/keyplan"
