#!/usr/bin/env python3
"""pymongo_seed.py — the peer for bench/mongodb.sh: the usual way to load documents into
MongoDB from Python, pymongo's Collection.insert_many().

    pymongo_seed.py --uri URI --database DB --items FILE --schema FILE --prefix P
                    [--setup-only] [--keep]

FILE is what `keyplan seed --db mongodb --dry-run --export-items FILE` writes: one
{"table": C, "item": DOCUMENT} per line, the document in canonical Extended JSON.
--schema is {"C": [{"name": ..., "key": [[field, direction], ...], "unique": bool}]}:
the indexes keyplan created for each collection. The script drops and creates P+C with
those indexes (not timed), then, timed:

  load   read FILE and decode every document (bson.json_util), as a loader of an
         Extended JSON export does;
  write  per collection, one insert_many() of all its documents (ordered; pymongo cuts
         them into batches at the server's maxWriteBatchSize and message size).

Afterwards it counts the documents of every collection (must equal the export's), drops
the collections (unless --keep) and prints one JSON line:
{"tool": "pymongo", "items": N, "load_seconds": ..., "write_seconds": ..., "seconds": ...,
 "items_per_s": ..., "write_items_per_s": ..., "cpu_user": ..., "cpu_sys": ...}
(seconds = load + write; CPU of the timed part only). With --setup-only it creates the
collections and indexes, prints nothing and exits: for another loader to fill them.
"""
import argparse
import json
import os
import sys
import time

from bson import json_util
from pymongo import MongoClient


def create(db, name, indexes):
    db.drop_collection(name)
    db.create_collection(name)
    for index in indexes:
        db[name].create_index([(field, direction) for field, direction in index["key"]],
                              name=index["name"], unique=bool(index.get("unique")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uri", required=True)
    ap.add_argument("--database", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--setup-only", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()

    client = MongoClient(a.uri)
    db = client[a.database]
    with open(a.schema) as f:
        schema = json.load(f)
    for name, indexes in schema.items():
        create(db, a.prefix + name, indexes)
    if a.setup_only:
        return 0

    t0, c0 = time.perf_counter(), os.times()
    documents = {}
    with open(a.items, encoding="utf-8") as f:
        for line in f:
            row = json_util.loads(line)
            documents.setdefault(row["table"], []).append(row["item"])
    t1 = time.perf_counter()
    for name, docs in documents.items():
        db[a.prefix + name].insert_many(docs, ordered=True)
    t2, c2 = time.perf_counter(), os.times()

    items = sum(len(d) for d in documents.values())
    for name, docs in documents.items():
        held = db[a.prefix + name].count_documents({})
        if held != len(docs):
            print(f"pymongo_seed.py: {a.prefix + name} holds {held} documents, {len(docs)} were inserted", file=sys.stderr)
            return 1
    if not a.keep:
        for name in documents:
            db.drop_collection(a.prefix + name)
    print(json.dumps({"tool": "pymongo", "items": items, "load_seconds": t1 - t0, "write_seconds": t2 - t1,
                      "seconds": t2 - t0, "items_per_s": items / (t2 - t0), "write_items_per_s": items / (t2 - t1),
                      "cpu_user": c2.user - c0.user, "cpu_sys": c2.system - c0.system}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
