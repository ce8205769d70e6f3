#!/usr/bin/env python3
"""mutations.py — does verify notice one record changed behind keyplan's back?

For each run: generate an example's data, seed it with keyplan, then change, delete or
add ONE item / document / row with an independent client (boto3, pymongo,
cassandra-driver: never keyplan's code), read it back with that client to confirm the
change landed, and run `keyplan verify` in its default mode. The run is caught when
verify exits 1 naming a failed pattern. Kinds of change, in turn:

  value  a field value a pattern returns
  child  a child item / document / row deleted
  extra  an extra item inside a listing's partition (a copy under a new key)
  index  an index key removed, so the item falls out of the index (DynamoDB GSI keys,
         a MongoDB indexed field, a Cassandra query table's row: the copy an index is)
  copy   one of two denormalised copies changed (a copy_of attribute, a query table)

Usage: mutations.py --db DB --keyplan BIN --url URL --work DIR [--runs N] [--seed S]
Prints one line per run and "caught N of M"; exits 1 unless every run was caught.
"""
import argparse
import copy as copying
import datetime
import decimal
import json
import os
import random
import re
import subprocess
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# scales at which every root has at most 2,000 records: verify's default mode then takes
# every record as an anchor (above that it stratifies)
EXAMPLES = [("saas-control-plane", "0.001"), ("ecommerce-single-table", "0.0001"), ("order-response", "0.00001"),
            ("leaderboard", "0.000005"), ("auction-mixes", "0.0001")]
KINDS = ["value", "child", "extra", "index", "copy"]


def snake(name):
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


class Model:
    """What the model's patterns return: (entity, attribute) pairs a change must touch."""

    def __init__(self, path):
        m = json.load(open(path))
        self.name = m["model"]
        self.entities = m["entities"]
        self.relations = m.get("relations", [])
        self.observable = {}          # entity -> set of attributes some pattern returns
        self.listed = set()           # entities some pattern lists ($each)
        for p in m.get("access_patterns", []):
            self.walk(p.get("returns"), p.get("root"))
        self.keys = {e: set(d.get("key", [])) for e, d in self.entities.items()}
        self.copies = {e: {a for a, t in d.get("attributes", {}).items() if isinstance(t, dict) and "copy_of" in t}
                       for e, d in self.entities.items()}

    def hop(self, entity, name):
        if name in self.entities:
            return name
        for r in self.relations:
            if r.get("name") == name and r.get("from") == entity:
                return r.get("to")
            if r.get("inverse") == name and r.get("to") == entity:
                return r.get("from")
        for r in self.relations:  # a relation named from elsewhere
            if r.get("name") == name:
                return r.get("to")
            if r.get("inverse") == name:
                return r.get("from")
        return None

    def path(self, entity, text):
        parts = text.split(".")
        for part in parts[:-1]:
            entity = self.hop(entity, part) if entity else None
        if entity and entity in self.entities:
            self.observable.setdefault(entity, set()).add(parts[-1])

    def walk(self, shape, context):
        if isinstance(shape, str):
            if "." in shape and not shape.startswith("$") and not shape.startswith(":"):
                self.path(context, shape)
            return
        if not isinstance(shape, dict):
            return
        inner = context
        each = shape.get("$each") or shape.get("$one") or shape.get("$count")
        if isinstance(each, str):
            inner = context if each == "$root" else context
            if each != "$root":
                for part in each.split("."):
                    inner = self.hop(inner, part) if inner else None
            if inner and "$each" in shape:
                self.listed.add(inner)
        for k, v in shape.items():
            if not k.startswith("$"):
                self.walk(v, inner)
        if "$value" in shape:
            self.walk(shape["$value"], inner)


def changed(v, rng):
    """A different value of the same type."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1 + rng.randrange(5)
    if isinstance(v, float):
        return v + 0.5
    if isinstance(v, decimal.Decimal):
        return v + 1
    if isinstance(v, str):
        return v + "~"
    if isinstance(v, datetime.datetime):
        return v + datetime.timedelta(seconds=1)
    if isinstance(v, uuid.UUID):
        return uuid.uuid1() if v.version == 1 else uuid.uuid4()  # a timeuuid stays a timeuuid
    if isinstance(v, list):
        return v[:-1] if v else v
    return None


# ---- DynamoDB ------------------------------------------------------------------------------------------

class Dynamo:
    def __init__(self, url):
        import boto3
        from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
        self.c = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                              aws_secret_access_key="x")
        self.de, self.se = TypeDeserializer(), TypeSerializer()

    def scan(self, table):
        out, start = [], None
        while True:
            kw = {"TableName": table, "ConsistentRead": True}
            if start:
                kw["ExclusiveStartKey"] = start
            r = self.c.scan(**kw)
            out += [{k: self.de.deserialize(v) for k, v in it.items()} for it in r["Items"]]
            start = r.get("LastEvaluatedKey")
            if not start:
                return [i for i in out if "_et" in i]

    def put(self, table, item):
        self.c.put_item(TableName=table, Item={k: self.se.serialize(v) for k, v in item.items()})

    def get(self, table, item):
        r = self.c.get_item(TableName=table, Key={"PK": self.se.serialize(item["PK"]), "SK": self.se.serialize(item["SK"])},
                            ConsistentRead=True)
        return {k: self.de.deserialize(v) for k, v in r["Item"].items()} if "Item" in r else None

    def delete(self, table, item):
        self.c.delete_item(TableName=table, Key={"PK": self.se.serialize(item["PK"]), "SK": self.se.serialize(item["SK"])})

    def mutate(self, kind, model, tables, prefix, rng):
        table = prefix + tables[0]
        items = self.scan(table)
        structural = re.compile(r"^(PK|SK|GSI\d+PK|GSI\d+SK|LSI\d+SK|_et)$")

        def value_change(attrs_of):
            cands = [(it, a) for it in items for a in attrs_of(it["_et"])
                     if a in it and not structural.match(a) and a not in model.keys.get(it["_et"], ())
                     and changed(it[a], rng) is not None and changed(it[a], rng) != it[a]]
            if not cands:
                return None
            it, a = rng.choice(cands)
            new = dict(it)
            new[a] = changed(it[a], rng)
            self.put(table, new)
            assert self.get(table, it)[a] == new[a], "the change did not land"
            return f"{it['_et']} PK={it['PK']} SK={it['SK']}: {a} {it[a]!r} -> {new[a]!r}"

        if kind == "value":
            return value_change(lambda e: model.observable.get(e, ()))
        if kind == "copy":
            return value_change(lambda e: model.copies.get(e, set()) & model.observable.get(e, set())) or \
                value_change(lambda e: model.observable.get(e, ()))
        listed = [it for it in items if it["_et"] in model.listed and model.observable.get(it["_et"])]
        if kind == "child":
            it = rng.choice(listed)
            self.delete(table, it)
            assert self.get(table, it) is None, "the item is still there"
            return f"deleted {it['_et']} PK={it['PK']} SK={it['SK']}"
        if kind == "extra":
            it = rng.choice(listed)
            new = dict(it)
            new["SK"] = it["SK"] + "~x"
            for k in model.keys.get(it["_et"], ()):
                if k in new and isinstance(new[k], str):
                    new[k] = new[k] + "~x"
                elif k in new and isinstance(new[k], (int, decimal.Decimal)) and not isinstance(new[k], bool):
                    new[k] = new[k] + 1000000
            for k in list(new):
                if re.match(r"^(GSI\d+SK|LSI\d+SK)$", k) and isinstance(new[k], str):
                    new[k] = new[k] + "~x"
            self.put(table, new)
            assert self.get(table, new) is not None, "the extra item is not there"
            return f"added a copy of {it['_et']} PK={it['PK']} SK={it['SK']} as SK={new['SK']}"
        if kind == "index":
            cands = [it for it in listed if any(re.match(r"^GSI\d+PK$", k) for k in it)]
            if not cands:
                return None
            it = rng.choice(cands)
            gsi = rng.choice(sorted(k[:-2] for k in it if re.match(r"^GSI\d+PK$", k)))
            new = {k: v for k, v in it.items() if k not in (gsi + "PK", gsi + "SK")}
            self.put(table, new)
            assert gsi + "PK" not in self.get(table, it), "the index key is still there"
            return f"{it['_et']} PK={it['PK']} SK={it['SK']}: removed {gsi}PK/{gsi}SK (out of {gsi})"
        return None


# ---- MongoDB -------------------------------------------------------------------------------------------

class Mongo:
    def __init__(self, url):
        import pymongo
        self.client = pymongo.MongoClient(url)

    def mutate(self, kind, model, containers, prefix, rng):
        db = self.client[model.name]
        colls = [(c, db[prefix + c]) for c in containers]
        docs = [(c, coll, d) for c, coll in colls for d in coll.find({"_kp": {"$exists": False}})]
        docs = [x for x in docs if x[0] in model.entities]

        def value_change(attrs_of):
            cands = [(c, coll, d, a) for c, coll, d in docs for a in attrs_of(c)
                     if a in d and a != "_id" and a not in model.keys.get(c, ()) and changed(d[a], rng) is not None
                     and changed(d[a], rng) != d[a]]
            if not cands:
                return None
            c, coll, d, a = rng.choice(cands)
            new = changed(d[a], rng)
            coll.update_one({"_id": d["_id"]}, {"$set": {a: new}})
            assert coll.find_one({"_id": d["_id"]})[a] == new, "the change did not land"
            return f"{c} _id={d['_id']}: {a} {d[a]!r} -> {new!r}"

        if kind == "value":
            return value_change(lambda e: model.observable.get(e, ()))
        if kind == "copy":
            return value_change(lambda e: model.copies.get(e, set()) & model.observable.get(e, set())) or \
                value_change(lambda e: model.observable.get(e, ()))
        listed = [x for x in docs if x[0] in model.listed and model.observable.get(x[0])]
        if kind == "child":
            c, coll, d = rng.choice(listed)
            coll.delete_one({"_id": d["_id"]})
            assert coll.find_one({"_id": d["_id"]}) is None, "the document is still there"
            return f"deleted {c} _id={d['_id']}"
        if kind == "extra":
            c, coll, d = rng.choice(listed)
            new = copying.deepcopy(d)
            new["_id"] = f"{d['_id']}~x" if isinstance(d["_id"], str) else {"copy": d["_id"]}
            for k in model.keys.get(c, ()):
                if isinstance(new.get(k), str):
                    new[k] = new[k] + "~x"
                elif isinstance(new.get(k), int) and not isinstance(new.get(k), bool):
                    new[k] = new[k] + 1000000
            coll.insert_one(new)
            assert coll.find_one({"_id": new["_id"]}) is not None, "the extra document is not there"
            return f"added a copy of {c} _id={d['_id']} as _id={new['_id']}"
        if kind == "index":
            cands = []
            for c, coll in colls:
                for name, info in coll.index_information().items():
                    field = info["key"][0][0]
                    if name == "_id_" or "." in field:
                        continue
                    cands += [(c, coll, d, field) for cc, _, d in listed if cc == c and field in d]
            if not cands:
                return None
            c, coll, d, field = rng.choice(cands)
            new = changed(d[field], rng)
            coll.update_one({"_id": d["_id"]}, {"$set": {field: new}})
            assert coll.find_one({"_id": d["_id"]})[field] == new, "the change did not land"
            return f"{c} _id={d['_id']}: indexed field {field} {d[field]!r} -> {new!r} (another index entry)"
        return None


# ---- Cassandra -----------------------------------------------------------------------------------------

class Cass:
    def __init__(self, url):
        from cassandra.cluster import Cluster
        host, _, port = url.rpartition(":")
        self.cluster = Cluster([host or "127.0.0.1"], port=int(port))
        self.s = self.cluster.connect()

    def tables(self, ks):
        rows = self.s.execute("SELECT table_name, column_name, kind, position FROM system_schema.columns "
                              "WHERE keyspace_name = %s", [ks])
        t = {}
        for r in rows:
            t.setdefault(r["table_name"], []).append((r["column_name"], r["kind"], r["position"]))
        return t

    def key_of(self, cols, row):
        return [(c, row[c]) for c, k, _ in cols if k in ("partition_key", "clustering")]

    def where(self, key):
        return " AND ".join(f'"{c}" = %s' for c, _ in key), [v for _, v in key]

    def fetch(self, ks, table, key):
        w, vals = self.where(key)
        return self.s.execute(f'SELECT * FROM "{ks}"."{table}" WHERE {w}', vals).one()

    def mutate(self, kind, model, containers, prefix, rng):
        from cassandra.query import dict_factory
        self.s.row_factory = dict_factory
        ks = snake(prefix + model.name)
        tables = self.tables(ks)
        rows = []
        for t, cols in tables.items():
            if t.startswith("kp_") or t == "keyplan_marker":
                continue
            for r in self.s.execute(f'SELECT * FROM "{ks}"."{t}"'):
                rows.append((t, cols, r))
        observable = {snake(a) for attrs in model.observable.values() for a in attrs}
        copies = {snake(a) for attrs in model.copies.values() for a in attrs}
        listed = [x for x in rows if any(k == "clustering" for _, k, _ in x[1])]

        def value_change(names, only_copies_tables=False):
            cands = [(t, cols, r, c) for t, cols, r in rows for c, k, _ in cols
                     if k in ("regular", "static") and c in names and r.get(c) is not None
                     and changed(r[c], rng) is not None and changed(r[c], rng) != r[c]
                     and (not only_copies_tables or "_by_" in t)]
            if not cands:
                return None
            t, cols, r, c = rng.choice(cands)
            new = changed(r[c], rng)
            key = self.key_of(cols, r)
            w, vals = self.where(key)
            self.s.execute(f'UPDATE "{ks}"."{t}" SET "{c}" = %s WHERE {w}', [new] + vals)
            assert self.fetch(ks, t, key)[c] == new, "the change did not land"
            return f"{t} {dict(key)}: {c} {r[c]!r} -> {new!r}"

        if kind == "value":
            return value_change(observable)
        if kind == "copy":
            # one of the copies a record has: a query table's row changed, the others not
            return value_change(copies & observable) or value_change(observable, only_copies_tables=True) or \
                value_change(observable)
        if kind in ("child", "index"):
            pool = [x for x in listed if "_by_" in x[0]] if kind == "index" else listed
            pool = pool or listed
            t, cols, r = rng.choice(pool)
            key = self.key_of(cols, r)
            w, vals = self.where(key)
            self.s.execute(f'DELETE FROM "{ks}"."{t}" WHERE {w}', vals)
            assert self.fetch(ks, t, key) is None, "the row is still there"
            return f"deleted from {t}: {dict(key)}" + (" (the row its query table holds)" if kind == "index" else "")
        if kind == "extra":
            t, cols, r = rng.choice(listed)
            new = dict(r)
            clustering = [c for c, k, _ in sorted(cols, key=lambda x: x[2]) if k == "clustering"]
            c = clustering[-1]
            new[c] = changed(r[c], rng)
            names = [n for n in new if new[n] is not None]
            self.s.execute(f'INSERT INTO "{ks}"."{t}" ({", ".join(chr(34) + n + chr(34) for n in names)}) '
                           f'VALUES ({", ".join(["%s"] * len(names))})', [new[n] for n in names])
            assert self.fetch(ks, t, self.key_of(cols, new)) is not None, "the extra row is not there"
            return f"added a row to {t} like {dict(self.key_of(cols, r))} with {c}={new[c]!r}"
        return None


# ---- the loop ------------------------------------------------------------------------------------------

def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--keyplan", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--examples", default="")
    a = ap.parse_args()
    client = {"dynamodb": Dynamo, "mongodb": Mongo, "cassandra": Cass}[a.db](a.url)
    examples = [e for e in EXAMPLES if not a.examples or e[0] in a.examples.split(",")]
    caught = 0
    for i in range(a.runs):
        rng = random.Random(a.seed * 1000003 + i)
        # every kind in turn; the examples shift by one each round of kinds
        kind = KINDS[i % len(KINDS)]
        name, scale = examples[(i + i // len(KINDS)) % len(examples)]
        model_path = os.path.join(ROOT, "examples", name, "model.json")
        model = Model(model_path)
        data = os.path.join(a.work, f"{name}-{scale}")
        if not os.path.isdir(data):
            r = run([a.keyplan, "generate", model_path, "--out", data, "--scale", scale, "--seed", "7"])
            if r.returncode:
                print(f"FAIL: run {i + 1}: generate: {r.stderr.strip()}")
                continue
        prefix = f"mu{os.getpid()}_{i}_" if a.db == "cassandra" else f"mu{os.getpid()}-{i}-"
        target = ["--db", a.db, "--target", f"{a.db}={a.url}", "--prefix", prefix]
        r = run([a.keyplan, "seed", model_path, "--data", data, "--scale", scale, "--format", "json", "--quiet"] + target)
        if r.returncode:
            print(f"FAIL: run {i + 1}: seed exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        containers = [c["name"] for c in json.loads(r.stdout)["databases"][0]["containers"]]
        try:
            what = client.mutate(kind, model, containers, prefix, rng)
            if what is None:  # nothing of that kind in this layout: a value instead
                kind, what = "value", client.mutate("value", model, containers, prefix, rng)
            vseed = rng.randrange(1 << 30)
            v = run([a.keyplan, "verify", model_path, "--data", data, "--scale", scale, "--seed", str(vseed),
                     "--format", "json", "--quiet"] + target)
            failed = []
            try:
                rep = json.loads(v.stdout)["databases"][0]
                failed = [p["name"] for p in rep["patterns"] if p["result"] == "fail"]
                # a change no pattern can see (a partition no pattern asks for, a column none
                # returns) fails the container it is in: the read-back names it
                bad_containers = [c for c in rep.get("containers") or [] if c["result"] == "fail"]
                failed += ["container " + c["name"] for c in bad_containers]
                # a container that differs names the items that differ, by identity: every
                # change shows as a missing, stray or changed item, an added one as a stray
                unnamed = [c["name"] for c in bad_containers
                           if sum(c.get(k, {}).get("count", 0) for k in ("missing", "strays", "changed")) < 1]
                if unnamed:
                    failed = []
                    print(f"    the read-back of {', '.join(unnamed)} differs but names no item")
                if kind == "extra" and bad_containers and not any(c.get("strays", {}).get("count", 0) for c in bad_containers):
                    failed = []
                    print("    an extra item was added, but no container names a stray")
                for c in bad_containers:
                    for k in ("missing", "strays", "changed"):
                        if c.get(k, {}).get("count"):
                            print(f"    {c['name']}: {c[k]['count']} {k}: {', '.join(c[k]['keys'])}")
                cov = rep.get("coverage", {})
                coverage = f"{cov.get('anchors')} of {cov.get('anchors_total')} anchors"
            except (ValueError, KeyError, IndexError):
                coverage = "no report"
            ok = v.returncode == 1 and failed
            caught += 1 if ok else 0
            print(f"{'ok' if ok else 'FAIL'}: {a.db} run {i + 1} {name} {kind}: {what}; verify exit {v.returncode}, "
                  f"failed {','.join(failed) or '-'} ({coverage}, --seed {vseed})", flush=True)
            if not ok and v.stderr:
                print("    " + v.stderr.strip()[-400:])
        except Exception as e:  # a broken mutation is a failed run, never a pass
            print(f"FAIL: {a.db} run {i + 1} {name} {kind}: {type(e).__name__}: {e}", flush=True)
        finally:
            run([a.keyplan, "teardown", model_path] + target)
    print(f"{a.db}: caught {caught} of {a.runs}")
    return 0 if caught == a.runs else 1


if __name__ == "__main__":
    sys.exit(main())
