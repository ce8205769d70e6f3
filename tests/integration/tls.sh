#!/usr/bin/env bash
#
# tls.sh BUILD_DIR — TLS is verified by default for non-loopback endpoints and only
# --insecure turns that off, with a warning (issue #8). A real TLS server (openssl
# s_server, a fresh self-signed certificate) listens on this machine's own
# non-loopback address (the first global IPv4 address, e.g. the eth0 one): to keyplan
# that is a remote host, so every client must verify the certificate and refuse it.
# For each database, `seed` is run against it:
#  - without --insecure: non-zero exit, a message about the certificate, and the
#    server never sees a completed handshake;
#  - with --insecure: the warning is printed and the TLS handshake completes (the
#    server's log shows it); the command still fails afterwards, since s_server speaks
#    no database protocol, but no longer because of the certificate.
# No address other than loopback means this test cannot be honest: it fails.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-tls.XXXXXX")
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

addr=$(ip -4 -o addr show scope global 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
[[ -n $addr ]] || addr=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -m1 -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | grep -v '^127\.')
[[ -n $addr ]] || { echo "FAIL: this machine has no non-loopback IPv4 address to test TLS against"; echo "0 passed, 1 failed"; exit 1; }
port=$((20000 + RANDOM % 20000))
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=keyplan-tls-test" \
    -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1 || { echo "FAIL: openssl could not make a certificate"; exit 1; }
openssl s_server -accept "$addr:$port" -cert "$work/cert.pem" -key "$work/key.pem" -naccept 1000 -quiet \
    >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/$addr/$port") 2>/dev/null && break; sleep 0.1; done
echo "tls integration: self-signed TLS server at $addr:$port (pid $server)"

model=$root/examples/saas-control-plane/model.json scale=0.0005
"$keyplan" generate "$model" --out "$work/data" --scale "$scale" --seed 1 >/dev/null 2>&1 || bad generate
export AWS_ACCESS_KEY_ID=AKIAKPSECTLS00000001 AWS_SECRET_ACCESS_KEY=kpsecTLSfakeSecret AWS_REGION=us-east-1

check() { # DB TARGET
    local db=$1 target=$2 status
    : >"$work/server.log"
    timeout 60 "$keyplan" seed "$model" --db "$db" --data "$work/data" --scale "$scale" --prefix kpsec-tls- \
        --target "$db=$target" >"$work/$db.out" 2>&1
    status=$?
    if [[ $status -ne 0 && $status -ne 124 ]] && grep -qiE "certificate|verify|self.signed|TLS|SSL" "$work/$db.out"; then
        ok "$db: refused without --insecure (exit $status): $(grep -m1 -iE 'error' "$work/$db.out" | cut -c1-220)"
    else
        bad "$db: without --insecure exit $status"; cat "$work/$db.out"
    fi
    timeout 60 "$keyplan" seed "$model" --db "$db" --data "$work/data" --scale "$scale" --prefix kpsec-tls- \
        --target "$db=$target" --insecure >"$work/$db-insecure.out" 2>&1
    status=$?
    grep -q "warning: --insecure" "$work/$db-insecure.out" && ok "$db: --insecure warns" || bad "$db: --insecure printed no warning"
    if grep -qiE "certificate verify failed|self.signed|did not verify" "$work/$db-insecure.out"; then
        bad "$db: --insecure still failed on the certificate"; cat "$work/$db-insecure.out"
    else
        ok "$db: with --insecure the certificate is accepted (then: exit $status, $(grep -m1 -i error "$work/$db-insecure.out" | cut -c1-160))"
    fi
}

check dynamodb "https://$addr:$port"
check mongodb "mongodb://$addr:$port/?tls=true&serverSelectionTimeoutMS=3000"
check cassandra "tls://$addr:$port"

# plain text to the same non-loopback address is refused before any connection
for pair in "dynamodb=http://$addr:$port" "mongodb=mongodb://$addr:$port/" "cassandra=$addr:$port"; do
    db=${pair%%=*}
    "$keyplan" seed "$model" --db "$db" --data "$work/data" --scale "$scale" --target "$pair" >"$work/plain.out" 2>&1
    status=$?
    [[ $status -eq 2 ]] && ok "$db: plain text to $addr refused (exit 2)" || { bad "$db: plain text to $addr exit $status"; cat "$work/plain.out"; }
done

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
