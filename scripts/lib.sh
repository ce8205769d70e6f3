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
