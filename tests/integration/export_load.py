"""export_load.py — loads the files `keyplan seed --export` wrote into a live server with
another client than keyplan's, as the database's own bulk loader would, so that
`keyplan verify` can then judge what arrived:

  dynamodb DIR URL CREATE_TABLE_JSON  the table from `keyplan emit`'s create-table.json,
      then every {"Item": ...} line of DIR/<table>/data-*.json.gz (DynamoDB JSON, as
      ImportTable reads it) through BatchWriteItem; import-table.json is checked against
      botocore's own model of the ImportTable input
  mongodb DIR URI DATABASE  every DIR/<collection>.json line (canonical Extended JSON, as
      mongoimport reads it) parsed by bson.json_util and inserted

  cassandra-statics CSV HOST PORT KEYSPACE TABLE  the static rows of a table (partition key
      and static columns, which cqlsh COPY refuses without the clustering columns) read
      with Python's csv module in the dialect DSBulk and cqlsh read (backslash escapes)
      and inserted with cassandra-driver, each value converted to its column's CQL type

Prints one "ok ..." line per check; exits 1 on the first failure."""
import glob
import gzip
import json
import os
import sys


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def dynamodb(folder, url, create_table):
    import boto3
    from botocore.validate import validate_parameters
    client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
    tables = [d for d in glob.glob(os.path.join(folder, "*")) if os.path.isdir(d)]
    if len(tables) != 1:
        fail(f"expected one table folder in {folder}, found {tables}")
    table_dir = tables[0]
    with open(os.path.join(table_dir, "import-table.json")) as f:
        params = json.load(f)
    shape = client.meta.service_model.operation_model("ImportTable").input_shape
    validate_parameters(params, shape)   # raises on anything the API would refuse
    if params["InputFormat"] != "DYNAMODB_JSON" or params["InputCompressionType"] != "GZIP":
        fail(f"import-table.json: {params['InputFormat']} / {params['InputCompressionType']}")
    print(f"ok import-table.json is a valid ImportTable input for table {params['TableCreationParameters']['TableName']}")
    with open(create_table) as f:
        request = json.load(f)
    client.create_table(**request)
    client.get_waiter("table_exists").wait(TableName=request["TableName"])
    items = []
    for path in sorted(glob.glob(os.path.join(table_dir, "data-*.json.gz"))):
        with gzip.open(path, "rt") as f:
            for line in f:
                record = json.loads(line)
                if set(record) != {"Item"}:
                    fail(f"{path}: a line is not one {{\"Item\": ...}}: {line[:80]}")
                items.append(record["Item"])
    for start in range(0, len(items), 25):
        pending = {request["TableName"]: [{"PutRequest": {"Item": i}} for i in items[start:start + 25]]}
        while pending:
            answer = client.batch_write_item(RequestItems=pending)
            pending = answer.get("UnprocessedItems") or {}
    print(f"ok {len(items)} DynamoDB JSON items loaded into {request['TableName']}")


def mongodb(folder, uri, database):
    import pymongo
    from bson import json_util
    db = pymongo.MongoClient(uri)[database]
    total = 0
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(path)[:-len(".json")]
        with open(path) as f:
            docs = [json_util.loads(line) for line in f if line.strip()]
        if docs:
            db[name].insert_many(docs, ordered=False)
        total += len(docs)
        print(f"ok {len(docs)} Extended JSON documents loaded into {name}")
    if total == 0:
        fail(f"no documents in {folder}")


def cassandra_statics(path, host, port, keyspace, table):
    import csv
    import datetime
    import decimal
    import uuid
    from cassandra.cluster import Cluster
    session = Cluster([host], port=int(port)).connect()
    types = {r.column_name: r.type for r in session.execute(
        "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s", (keyspace, table))}

    def typed(column, text):
        kind = types[column]
        if text == "":
            return None
        if kind in ("int", "bigint", "smallint", "tinyint", "varint", "counter"):
            return int(text)
        if kind in ("float", "double"):
            return float(text)
        if kind == "decimal":
            return decimal.Decimal(text)
        if kind == "boolean":
            return text == "true"
        if kind == "timestamp":
            return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if kind in ("uuid", "timeuuid"):
            return uuid.UUID(text)
        return text

    with open(path, newline="") as f:
        rows = list(csv.reader(f, quotechar='"', escapechar="\\", doublequote=False))
    header, body = rows[0], rows[1:]
    insert = session.prepare(f"INSERT INTO {keyspace}.{table} ({', '.join(header)}) VALUES ({', '.join('?' * len(header))})")
    for row in body:
        session.execute(insert, [typed(c, v) for c, v in zip(header, row)])
    print(f"ok {len(body)} static rows loaded into {table}")


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "dynamodb":
        dynamodb(*sys.argv[2:5])
    elif kind == "mongodb":
        mongodb(*sys.argv[2:5])
    elif kind == "cassandra-statics":
        cassandra_statics(*sys.argv[2:7])
    else:
        fail(f"unknown database {kind}")
