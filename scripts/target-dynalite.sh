#!/usr/bin/env bash
#
# target-dynalite.sh — a local DynamoDB (dynalite 4.0.0, Node.js) on loopback
# (http://127.0.0.1:18000) for keyplan's integration tests, CI and a first try by hand.
#
#   scripts/target-dynalite.sh install   dynalite into .deps/dynalite with npm ci, from
#                                        scripts/dynalite/package-lock.json (skipped when
#                                        already installed from that lock file; a second
#                                        install waits for one already running)
#   scripts/target-dynalite.sh start [--port N] [--path DIR]
#                                        start it in the background; returns once it
#                                        answers ListTables
#       --port N     listen on 127.0.0.1:N instead of 18000
#       --path DIR   keep the tables on disk in DIR (LevelDB; created when missing)
#                    instead of in memory, so that they survive a restart
#   scripts/target-dynalite.sh stop      TERM, up to 10 s, then KILL
#   scripts/target-dynalite.sh status    "running ..." (exit 0) or "stopped" (exit 3)
#   scripts/target-dynalite.sh url       the endpoint URL (of the running server, else
#                                        the default one), e.g. http://127.0.0.1:18000
#
# Needs Node.js ≥ 20 and npm. Tables become ACTIVE at once (--createTableMs 0, and the
# same for delete and update). dynalite does not check signatures: any credentials do.
# Output of the server: .deps/run/dynalite.log; pid: .deps/run/dynalite.pid.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

HOST=127.0.0.1
DEFAULT_PORT=18000
NODE_MIN=20
START_TIMEOUT=30
STOP_TIMEOUT=10

LOCK_DIR=$KP_ROOT/scripts/dynalite          # package.json + package-lock.json
DEPS_DIR=$KP_ROOT/.deps/dynalite
CLI=$DEPS_DIR/node_modules/dynalite/cli.js
RUN_ROOT=$KP_ROOT/.deps/run
PID_FILE=$RUN_ROOT/dynalite.pid
LOG_FILE=$RUN_ROOT/dynalite.log
MODE_FILE=$RUN_ROOT/dynalite.mode           # lines port=N and path=DIR|memory of the running server

# ---- Node.js -----------------------------------------------------------------------------

node_help() {
    printf '%s' "dynalite needs Node.js ≥ $NODE_MIN with npm. Debian 12's own nodejs package is 18, too old: " \
        "install Node.js $NODE_MIN or newer from https://nodejs.org/en/download (or NodeSource's apt " \
        "repository, https://github.com/nodesource/distributions) and make sure 'node' and 'npm' are on PATH."
}

ensure_node() {
    kp_have node || kp_die "node is not installed. $(node_help)"
    local version major
    version=$(node --version 2>/dev/null || true)
    major=${version#v}
    major=${major%%.*}
    [[ $major =~ ^[0-9]+$ ]] || kp_die "could not read the version of node ('node --version' said '$version'). $(node_help)"
    ((major >= NODE_MIN)) || kp_die "node is $version. $(node_help)"
}

# ---- install -----------------------------------------------------------------------------

installed() {
    [[ -f $CLI && -f $DEPS_DIR/package-lock.json ]] &&
        cmp -s "$LOCK_DIR/package-lock.json" "$DEPS_DIR/package-lock.json" &&
        cmp -s "$LOCK_DIR/package.json" "$DEPS_DIR/package.json"
}

dynalite_version() {
    sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$DEPS_DIR/node_modules/dynalite/package.json" 2>/dev/null | head -n 1
}

# One install at a time (scripts/test.sh may have started one in the background): a
# second waits for the first, then finds it done.
cmd_install() {
    [[ $# -eq 0 ]] || kp_die "install takes no options, not '$*'" 2
    kp_locked dynalite-install install_now
}

install_now() {
    ensure_node
    if installed; then
        kp_log "dynalite $(dynalite_version) already installed in ${DEPS_DIR#"$KP_ROOT"/}; nothing to do"
        return 0
    fi
    kp_have npm || kp_die "npm is not installed (node is). $(node_help)"

    local started=$SECONDS npm_log=$KP_ROOT/.deps/dynalite-npm.log
    kp_log "installing dynalite with npm ci (node $(node --version), npm $(npm --version)) into ${DEPS_DIR#"$KP_ROOT"/}"
    mkdir -p "$DEPS_DIR"
    cp "$LOCK_DIR/package.json" "$LOCK_DIR/package-lock.json" "$DEPS_DIR/"
    # --ignore-scripts: the one install script (classic-level's node-gyp-build) only
    # looks for the prebuilt LevelDB binding that the package ships for linux-x64,
    # linux-arm64, darwin and win32; it is found at run time all the same.
    if ! (cd "$DEPS_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) </dev/null >"$npm_log" 2>&1; then
        tail -n 30 "$npm_log" >&2
        rm -f "$DEPS_DIR/package-lock.json"    # not installed: the next run tries again
        kp_die "npm ci failed in ${DEPS_DIR#"$KP_ROOT"/} (network or registry? npm's output above, all of it in ${npm_log#"$KP_ROOT"/})"
    fi
    [[ -f $CLI ]] || kp_die "npm ci finished but $CLI is missing"
    kp_log "installed dynalite $(dynalite_version) in ${DEPS_DIR#"$KP_ROOT"/} in $((SECONDS - started))s"
}

# ---- process and port helpers ------------------------------------------------------------

# server_pid — the pid of our running dynalite, or fail (a stale pid file is removed).
server_pid() {
    local pid args
    [[ -f $PID_FILE ]] || return 1
    pid=$(<"$PID_FILE")
    if [[ $pid =~ ^[0-9]+$ ]] && args=$(ps -ww -p "$pid" -o args= 2>/dev/null) &&
        [[ $args == *"$CLI"* ]]; then
        printf '%s\n' "$pid"
        return 0
    fi
    rm -f "$PID_FILE" "$MODE_FILE"
    return 1
}

# port_user PORT — describe what listens on 127.0.0.1:PORT, or fail when nothing does.
port_user() {
    local port=$1 line
    if kp_have ss; then
        line=$(ss -ltnpH "sport = :$port" 2>/dev/null | head -n 1)
        [[ -n $line ]] || return 1
        printf '%s\n' "$(awk '{print $4, $6}' <<<"$line")"
        return 0
    fi
    (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null || return 1
    printf 'a process (install ss to see which)\n'
}

# mode_get KEY — a value from the running server's mode file.
mode_get() {
    local line
    [[ -f $MODE_FILE ]] || return 1
    while IFS= read -r line; do
        if [[ $line == "$1="* ]]; then
            printf '%s\n' "${line#*=}"
            return 0
        fi
    done <"$MODE_FILE"
    return 1
}

running_port() {
    mode_get port 2>/dev/null || printf '%s\n' "$DEFAULT_PORT"
}

# ready PORT — true when dynalite on PORT answers ListTables with HTTP 200.
ready() {
    local now code
    now=$(date -u +%Y%m%dT%H%M%SZ)
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST "http://$HOST:$1/" \
        -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
        -H 'Content-Type: application/x-amz-json-1.0' \
        -H "X-Amz-Date: $now" \
        -H "Authorization: AWS4-HMAC-SHA256 Credential=x/${now%%T*}/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0" \
        --data '{}' 2>/dev/null) || return 1
    [[ $code == 200 ]]
}

log_tail() {
    [[ -s $LOG_FILE ]] || return 0
    printf -- '--- last lines of %s ---\n' "${LOG_FILE#"$KP_ROOT"/}" >&2
    tail -n 30 "$LOG_FILE" >&2
}

rss() {
    awk '/^VmRSS:/ { printf "%d MB", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || true
}

# ---- start / stop / status -------------------------------------------------------------

cmd_start() {
    local port=$DEFAULT_PORT path=''
    while [[ $# -gt 0 ]]; do
        case $1 in
            --port)
                [[ $# -ge 2 ]] || kp_die "--port needs a port number" 2
                port=$2; shift ;;
            --port=*) port=${1#--port=} ;;
            --path)
                [[ $# -ge 2 ]] || kp_die "--path needs a directory" 2
                path=$2; shift ;;
            --path=*) path=${1#--path=} ;;
            *) kp_die "unknown start option '$1' (try --help)" 2 ;;
        esac
        shift
    done
    if ! [[ $port =~ ^[1-9][0-9]{0,4}$ ]] || ((port > 65535)); then
        kp_die "--port takes a port number (1-65535), not '$port'" 2
    fi
    if [[ -n $path ]]; then
        mkdir -p -- "$path" || kp_die "cannot create --path directory '$path'"
        path=$(cd -- "$path" && pwd)
    fi
    local mode="port=$port"$'\n'"path=${path:-memory}" pid

    if pid=$(server_pid); then
        local running_mode
        running_mode=$(cat "$MODE_FILE" 2>/dev/null || echo unknown)
        [[ $running_mode == "$mode" ]] ||
            kp_die "dynalite is already running (pid $pid) with ${running_mode//$'\n'/ }, not ${mode//$'\n'/ }; run '$0 stop' first"
        if ready "$port"; then
            kp_log "dynalite is already running (pid $pid) at http://$HOST:$port; nothing to do"
            return 0
        fi
        kp_log "dynalite is already running (pid $pid) but does not answer yet; waiting"
    else
        local user
        if user=$(port_user "$port"); then
            kp_die "port $port on $HOST is already taken by $user — not starting dynalite there (stop that process, or pass --port N)"
        fi

        installed || { kp_log "dynalite is not installed yet; installing first"; cmd_install; }
        ensure_node
        kp_have curl || kp_die "curl is needed to check that dynalite answers; on Debian or Ubuntu: 'sudo apt-get install curl'"
        kp_have setsid || kp_die "setsid (util-linux) is needed to run dynalite in the background"

        local -a command=(node "$CLI" --host "$HOST" --port "$port"
                          --createTableMs 0 --deleteTableMs 0 --updateTableMs 0)
        [[ -n $path ]] && command+=(--path "$path")

        mkdir -p "$RUN_ROOT"
        rm -f "$PID_FILE"
        printf '%s\n' "$mode" >"$MODE_FILE"
        kp_log "starting dynalite $(dynalite_version) at http://$HOST:$port (${path:+tables in }${path:-in memory}); log ${LOG_FILE#"$KP_ROOT"/}"
        # The child writes its own pid and then becomes node, in its own session so that
        # it outlives this script and a terminal's hangup.
        (
            # shellcheck disable=SC2016  # expanded by the inner sh
            exec setsid sh -c 'echo $$ >"$0"; exec "$@"' "$PID_FILE" "${command[@]}"
        ) </dev/null >"$LOG_FILE" 2>&1 &
    fi

    local started=$SECONDS deadline=$((SECONDS + START_TIMEOUT))
    until [[ -s $PID_FILE ]] && ready "$port"; do
        if [[ -s $PID_FILE ]] && ! server_pid >/dev/null; then
            log_tail
            kp_die "dynalite exited during start-up (after $((SECONDS - started))s); see above"
        fi
        if ((SECONDS >= deadline)); then
            log_tail
            cmd_stop >/dev/null 2>&1 || true
            kp_die "dynalite did not answer ListTables at http://$HOST:$port within ${START_TIMEOUT}s; stopped it (log tail above)"
        fi
        sleep 0.2
    done
    kp_log "dynalite is ready at http://$HOST:$port (pid $(<"$PID_FILE"))"
}

cmd_stop() {
    [[ $# -eq 0 ]] || kp_die "stop takes no options, not '$*'" 2
    local pid waited=0
    if ! pid=$(server_pid); then
        kp_log "dynalite is not running"
        return 0
    fi
    kp_log "stopping dynalite (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < STOP_TIMEOUT * 5)); do
        sleep 0.2
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kp_warn "dynalite (pid $pid) still running after ${STOP_TIMEOUT}s; sending KILL"
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$PID_FILE" "$MODE_FILE"
    kp_log "dynalite stopped"
}

cmd_status() {
    [[ $# -eq 0 ]] || kp_die "status takes no options, not '$*'" 2
    local pid port path
    if pid=$(server_pid); then
        port=$(running_port)
        path=$(mode_get path 2>/dev/null || echo '?')
        [[ $path == memory ]] && path="in memory" || path="tables in $path"
        if ready "$port"; then
            printf 'running (pid %s) at http://%s:%s, %s, RSS %s\n' "$pid" "$HOST" "$port" "$path" "$(rss "$pid")"
        else
            printf 'running (pid %s), not answering at http://%s:%s yet\n' "$pid" "$HOST" "$port"
        fi
        return 0
    fi
    printf 'stopped\n'
    return 3
}

cmd_url() {
    [[ $# -eq 0 ]] || kp_die "url takes no options, not '$*'" 2
    local port=$DEFAULT_PORT
    server_pid >/dev/null && port=$(running_port)
    printf 'http://%s:%s\n' "$HOST" "$port"
}

# ---- main ------------------------------------------------------------------------------

[[ $# -ge 1 ]] || { kp_usage "${BASH_SOURCE[0]}" >&2; exit 2; }
action=$1
shift
case $action in
    install) cmd_install "$@" ;;
    start)   cmd_start "$@" ;;
    stop)    cmd_stop "$@" ;;
    status)  cmd_status "$@" ;;
    url)     cmd_url "$@" ;;
    -h|--help|help) kp_usage "${BASH_SOURCE[0]}" ;;
    *) kp_die "unknown command '$action' (install, start, stop, status, url; try --help)" 2 ;;
esac
