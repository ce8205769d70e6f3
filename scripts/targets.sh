#!/usr/bin/env bash
#
# targets.sh — installs, starts, stops and reports keyplan's local live servers, all at
# once or one at a time.
#
#   scripts/targets.sh install|start|stop|status|url [TARGET] [OPTIONS...]
#
#   TARGET     server                       script                        address
#   dynamodb   dynalite 4.0.0               scripts/target-dynalite.sh    http://127.0.0.1:18000
#   mongodb    FerretDB 1.24.2 (SQLite)     scripts/target-ferretdb.sh    mongodb://127.0.0.1:28017/
#   cassandra  Apache Cassandra 5.0         scripts/target-cassandra.sh   127.0.0.1:19042
#   all        the three, in that order (the default)
#
# OPTIONS go to the target's script and need a single TARGET, e.g.
# 'scripts/targets.sh start dynamodb --path /tmp/tables'; see each script's --help.
# With all, every server is tried even when one fails; the exit status is then 1
# (status: 3 when any server is stopped). Logs and pid files: .deps/run/.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

ALL=(dynamodb mongodb cassandra)

script_of() {
    case $1 in
        dynamodb)  printf '%s\n' scripts/target-dynalite.sh ;;
        mongodb)   printf '%s\n' scripts/target-ferretdb.sh ;;
        cassandra) printf '%s\n' scripts/target-cassandra.sh ;;
    esac
}

[[ $# -ge 1 ]] || { kp_usage "${BASH_SOURCE[0]}" >&2; exit 2; }
verb=$1
shift
case $verb in
    install|start|stop|status|url) ;;
    -h|--help|help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;;
    *) kp_die "unknown command '$verb' (install, start, stop, status, url; try --help)" 2 ;;
esac

target=all
if [[ $# -ge 1 && $1 != -* ]]; then
    target=$1
    shift
fi
case $target in
    all) targets=("${ALL[@]}") ;;
    dynamodb|mongodb|cassandra) targets=("$target") ;;
    dynalite) targets=(dynamodb) ;;
    ferretdb) targets=(mongodb) ;;
    *) kp_die "unknown target '$target' (dynamodb, mongodb, cassandra or all)" 2 ;;
esac
if [[ $# -gt 0 && ${#targets[@]} -ne 1 ]]; then
    kp_die "options ($*) go to one server's script: name the target, e.g. '$0 $verb dynamodb $*'" 2
fi

failed=() stopped=()
for name in "${targets[@]}"; do
    script=$(script_of "$name")
    if [[ ! -f $script ]]; then
        if [[ ${#targets[@]} -eq 1 ]]; then
            [[ $verb == status ]] && { printf '%s: not available yet\n' "$name"; exit 3; }
            kp_die "$name: not available yet ($script does not exist)"
        fi
        case $verb in
            status|url) printf '%-9s  not available yet\n' "$name" ;;
            *) kp_log "$name: not available yet ($script does not exist); skipped" ;;
        esac
        continue
    fi

    status=0
    case $verb in
        status|url)
            # One line per server: "name  <what the script prints>".
            output=$(bash "$script" "$verb" "$@") || status=$?
            printf '%-9s  %s\n' "$name" "$output"
            ;;
        *)
            [[ ${#targets[@]} -gt 1 ]] && kp_section "$name: $verb"
            bash "$script" "$verb" "$@" || status=$?
            ;;
    esac
    if [[ ${#targets[@]} -eq 1 ]]; then
        exit "$status"     # one server: its script's own exit status
    fi
    if [[ $verb == status && $status -eq 3 ]]; then
        stopped+=("$name")
    elif [[ $status -ne 0 ]]; then
        failed+=("$name")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    kp_die "$verb failed for: ${failed[*]} (output above)"
fi
if [[ ${#stopped[@]} -gt 0 ]]; then
    exit 3
fi
