"""cassandra_count.py — an independent row counter for tests/integration/cassandra.sh.

Counts the rows of KEYSPACE.TABLE with Cassandra's own Python driver (never keyplan's
code): every CQL row that has its clustering columns, plus one per partition whose
static columns are set (what keyplan writes as a parent's static row), plus one per
partition that holds nothing but its key (a static row whose statics are all absent).

    python cassandra_count.py HOST PORT KEYSPACE TABLE   -> prints the count
"""
import sys

from cassandra.cluster import Cluster


def main():
    host, port, keyspace, table = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    cluster = Cluster([host], port=port, protocol_version=4)
    session = cluster.connect()
    meta = cluster.metadata.keyspaces[keyspace].tables[table]
    partition = [c.name for c in meta.partition_key]
    clustering = [c.name for c in meta.clustering_key]
    statics = [c.name for c in meta.columns.values() if c.is_static]
    count = 0
    seen = set()
    query = 'SELECT * FROM "%s"."%s"' % (keyspace, table)
    for row in session.execute(query):
        has_row = all(getattr(row, c) is not None for c in clustering)
        if statics:
            key = tuple(getattr(row, c) for c in partition)
            if key not in seen:
                seen.add(key)
                if any(getattr(row, c) is not None for c in statics) or not has_row:
                    count += 1
        if has_row:
            count += 1
    print(count)
    cluster.shutdown()


if __name__ == "__main__":
    main()
