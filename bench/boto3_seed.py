#!/usr/bin/env python3
"""boto3_seed.py — the peer for bench/seed-dynamodb.sh: the usual way to load items into
DynamoDB from Python, boto3's Table.batch_writer().

    boto3_seed.py --endpoint URL --items FILE --schema FILE --prefix P [--keep]

FILE is what `keyplan seed --dry-run --export-items FILE` writes: one
{"table": T, "item": {...}} per line, the item in DynamoDB JSON. --schema is a
CreateTable request for T. The script creates P+T (fresh: an existing one is deleted
first) and waits until it exists, then, timed:

  load   read FILE and turn every item into Python values (TypeDeserializer), as a
         script that loads an export does;
  write  one Table.batch_writer() per table, put_item for every item (boto3 packs
         25 per BatchWriteItem, one request at a time, and resends UnprocessedItems).

Then it deletes the table (unless --keep) and prints one JSON line:
{"tool": "boto3", "items": N, "load_seconds": ..., "write_seconds": ..., "seconds": ...,
 "items_per_s": ..., "write_items_per_s": ..., "cpu_user": ..., "cpu_sys": ...}
(seconds = load + write; CPU of the timed part only).
"""
import argparse
import json
import os
import sys
import time

import boto3
from boto3.dynamodb.types import TypeDeserializer
from botocore.config import Config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    # dynalite checks that requests are signed, not what with
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "keyplan")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "keyplan")
    session = boto3.session.Session(region_name="us-east-1")
    config = Config(retries={"max_attempts": 10, "mode": "standard"})
    ddb = session.resource("dynamodb", endpoint_url=a.endpoint, config=config)
    client = ddb.meta.client

    with open(a.schema) as f:
        schema = json.load(f)
    exported = schema["TableName"]
    table_name = a.prefix + exported
    schema["TableName"] = table_name
    try:
        client.delete_table(TableName=table_name)
        client.get_waiter("table_not_exists").wait(TableName=table_name, WaiterConfig={"Delay": 0.1})
    except client.exceptions.ResourceNotFoundException:
        pass
    client.create_table(**schema)
    client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 0.1})

    cpu0 = os.times()
    t0 = time.monotonic()
    deserialize = TypeDeserializer().deserialize
    items = []
    with open(a.items) as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["table"] != exported:
                sys.exit(f"boto3_seed.py: --items holds table {row['table']}, the --schema describes {exported}")
            items.append({k: deserialize(v) for k, v in row["item"].items()})
    t1 = time.monotonic()
    with ddb.Table(table_name).batch_writer() as writer:
        for item in items:
            writer.put_item(Item=item)
    t2 = time.monotonic()
    cpu1 = os.times()

    if not a.keep:
        client.delete_table(TableName=table_name)
        client.get_waiter("table_not_exists").wait(TableName=table_name, WaiterConfig={"Delay": 0.1})
    print(json.dumps({
        "tool": "boto3", "items": len(items),
        "load_seconds": round(t1 - t0, 3), "write_seconds": round(t2 - t1, 3), "seconds": round(t2 - t0, 3),
        "items_per_s": round(len(items) / (t2 - t0)), "write_items_per_s": round(len(items) / (t2 - t1)),
        "cpu_user": round(cpu1.user - cpu0.user, 3), "cpu_sys": round(cpu1.system - cpu0.system, 3),
    }))


if __name__ == "__main__":
    main()
