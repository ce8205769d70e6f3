#!/usr/bin/env python3
"""faults_readback.py — the independent content check of the fault tests.

Compares what a server holds with what keyplan's transform makes, as multisets of
items: every item is put in a canonical form (keys sorted, number wrappers of
extended JSON unwrapped, DynamoDB sets sorted) and hashed; per table the expected and
the actual items must be the same, none missing, none extra, none twice.

  faults_readback.py dynamodb URL EXPORT          scan the tables named in EXPORT
                                                  (Python's standard library only)
  faults_readback.py dump DUMP EXPORT             compare a dump file (same NDJSON
                                                  shape as EXPORT, e.g. from
                                                  fault_mongo_dump) with EXPORT

EXPORT is `keyplan seed --dry-run --export-items` output: {"table": T, "item": I}
lines. Prints one line per table, "TABLE expected N got M missing A extra B
duplicated C sha EXPECTED/ACTUAL", and a last line "readback ok|MISMATCH items=N
missing=A extra=B duplicated=C". Exit 0 when equal, 1 when not, 3 when the server
cannot be read.
"""
import collections
import hashlib
import json
import sys
import urllib.request


def canonical(value):
    """Canonical form of an item: extended-JSON number and date wrappers unwrapped,
    DynamoDB sets sorted; printed with sorted keys."""
    if isinstance(value, dict):
        if len(value) == 1:
            (k, v), = value.items()
            if k in ("$numberInt", "$numberLong"):
                return int(v)
            if k == "$numberDouble":
                return float(v)
            if k == "$date":
                return {"$date": canonical(v)}
            if k in ("SS", "NS", "BS") and isinstance(v, list):
                return {k: sorted(v)}
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def key_of(item):
    return json.dumps(canonical(item), sort_keys=True, separators=(",", ":"))


def load(path):
    tables = collections.OrderedDict()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                tables.setdefault(row["table"], []).append(key_of(row["item"]))
    return tables


def is_marker(item):
    text = item.get("marker", {}).get("S") if isinstance(item.get("marker"), dict) else None
    return isinstance(text, str) and text.startswith('{"tool":"keyplan"')


def scan_dynamodb(url, tables):
    got = collections.OrderedDict()
    for table in tables:
        rows, start = [], None
        while True:
            body = {"TableName": table, "ConsistentRead": True}
            if start:
                body["ExclusiveStartKey"] = start
            req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
                "X-Amz-Target": "DynamoDB_20120810.Scan", "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Date": "20260101T000000Z",
                "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, "
                                 "SignedHeaders=host, Signature=0"})
            answer = json.load(urllib.request.urlopen(req, timeout=60))
            rows += [key_of(i) for i in answer.get("Items", []) if not is_marker(i)]
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        got[table] = rows
    return got


def compare(expected, actual):
    totals = collections.Counter()
    for table in expected:
        want = collections.Counter(expected[table])
        have = collections.Counter(actual.get(table, []))
        missing = sum((want - have).values())
        extra = sum((have - want).values())
        duplicated = sum(n - 1 for n in have.values() if n > 1)
        sha_want = hashlib.sha256("\n".join(sorted(want.elements())).encode()).hexdigest()[:16]
        sha_have = hashlib.sha256("\n".join(sorted(have.elements())).encode()).hexdigest()[:16]
        print(f"{table} expected {sum(want.values())} got {sum(have.values())} missing {missing} extra {extra} "
              f"duplicated {duplicated} sha {sha_want}/{sha_have}")
        totals.update(items=sum(want.values()), missing=missing, extra=extra, duplicated=duplicated)
    for table in actual:
        if table not in expected and actual[table]:
            print(f"{table} expected 0 got {len(actual[table])} (a table the export does not name)")
            totals.update(extra=len(actual[table]))
    ok = totals["missing"] == 0 and totals["extra"] == 0 and totals["duplicated"] == 0
    print(f"readback {'ok' if ok else 'MISMATCH'} items={totals['items']} missing={totals['missing']} "
          f"extra={totals['extra']} duplicated={totals['duplicated']}")
    return 0 if ok else 1


def main(argv):
    if len(argv) != 4 or argv[1] not in ("dynamodb", "dump"):
        print(__doc__, file=sys.stderr)
        return 2
    expected = load(argv[3])
    try:
        actual = scan_dynamodb(argv[2], expected) if argv[1] == "dynamodb" else load(argv[2])
    except OSError as e:
        print(f"faults_readback: cannot read the server: {e}", file=sys.stderr)
        return 3
    return compare(expected, actual)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
