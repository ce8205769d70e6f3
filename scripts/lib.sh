# shellcheck shell=bash
#
# lib.sh — shell helpers shared by scripts/*.sh and .ci/run. Source it; do not run it.
#
# It sets KP_ROOT to the repository root, found from this file's own location, so
# every script works from any directory. Messages go to stderr as "<script>: ...",
# the same prefix everywhere, so a CI log says which script spoke.

KP_ROOT="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)"
KP_SCRIPT="$(basename -- "$0")"

kp_log() {
    printf '%s: %s\n' "$KP_SCRIPT" "$*" >&2
}

kp_warn() {
    printf '%s: warning: %s\n' "$KP_SCRIPT" "$*" >&2
}

# kp_die MESSAGE [STATUS] — print "script: error: MESSAGE" and exit (status 1 by default).
kp_die() {
    printf '%s: error: %s\n' "$KP_SCRIPT" "$1" >&2
    exit "${2:-1}"
}

# kp_section TITLE — a header that stands out in a long log.
kp_section() {
    printf '\n==== %s ====\n' "$*" >&2
}

kp_have() {
    command -v "$1" >/dev/null 2>&1
}

# kp_as_root CMD... — run CMD as root: directly when already root, else through sudo.
kp_as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif kp_have sudo; then
        sudo "$@"
    else
        kp_die "need root to run '$*' and sudo is not installed"
    fi
}

# kp_build_path DIR — DIR itself when absolute, else DIR under the repository root.
kp_build_path() {
    case "$1" in
        /*) printf '%s\n' "$1" ;;
        *)  printf '%s\n' "$KP_ROOT/$1" ;;
    esac
}

# kp_usage FILE — print FILE's header comment (from line 3 to the first line that is
# not a comment), which every script keeps as its usage text.
kp_usage() {
    awk 'NR < 3 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$1"
}

# kp_locked NAME CMD... — run CMD while holding the lock file .deps/NAME.lock (flock(1)),
# so that two runs of it never overlap: an install started in the background by
# scripts/test.sh and the same install asked for by a test suite, or by two terminals.
# The second waits for the first, then runs CMD itself (an install then finds the work
# done, or, when the first failed, tries again and reports why). CMD runs in this shell,
# under its set -e; the lock goes when CMD returns or the script exits. Without flock
# (not util-linux), CMD just runs.
kp_locked() {
    local name=$1 lock fd
    shift
    if ! kp_have flock; then
        "$@"
        return
    fi
    lock=$KP_ROOT/.deps/$name.lock
    mkdir -p -- "${lock%/*}"
    exec {fd}>"$lock"
    if ! flock -n "$fd"; then
        kp_log "waiting for another run of '$name' to finish (it holds ${lock#"$KP_ROOT"/})"
        flock "$fd"
        kp_log "'$name' is free now; going on"
    fi
    "$@"
    exec {fd}>&-
}
