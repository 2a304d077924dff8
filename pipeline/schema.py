"""The Parquet result schema: one row per deal x variant x policy.

Every file of a run holds these columns (and nothing else); the partition
folders ``variant=…/policy=…/`` are for people and pruning only, so readers
must read with hive partitioning *off* (``hive_partitioning=false`` in
DuckDB, ``partitioning=None`` in pyarrow): the ``variant`` and ``policy``
columns in the file are the truth. Schema version and engine version are
also written into each file's footer metadata (``acesup.schema_version``,
``acesup.engine_version``, ``acesup.run_id``), with the player's behaviour
fingerprint (``acesup.fingerprint``, pipeline.fingerprint).

column      type     meaning
run_id      string   stable hash of the run spec (pipeline.spec)
seed        uint64   deal seed (engine_rs_free.deals)
deal        int64    deal index within the seed
variant     string   rule set name of the game played (``standard``, ``strict+optional``)
policy      string   exact policy name (``greedy``, ``human:sacrifice=3``,
                     ``solver``, ``solver:sensible+leftmost+must_fill``, ``pimc:samples=32``)
score       int8     discards at the end, 0..48 (solver: max_score; a lower bound if gave_up)
won         bool     score == 48
moves       int16    cards moved into empty piles (solver: in its line)
decisions   int16    decision points with more than one choice (solver: along its line)
nodes       int64    solver search nodes (null for other policies)
status      string   solver: ``solved`` | ``gave_up`` (null for other policies)
line        string   game line (action text of engine_rs_free.game); solver rows that
                     are won always have it, other rows only when the run asks for lines
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

RESULT_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("seed", pa.uint64(), nullable=False),
        pa.field("deal", pa.int64(), nullable=False),
        pa.field("variant", pa.string(), nullable=False),
        pa.field("policy", pa.string(), nullable=False),
        pa.field("score", pa.int8(), nullable=False),
        pa.field("won", pa.bool_(), nullable=False),
        pa.field("moves", pa.int16(), nullable=False),
        pa.field("decisions", pa.int16(), nullable=False),
        pa.field("nodes", pa.int64(), nullable=True),
        pa.field("status", pa.string(), nullable=True),
        pa.field("line", pa.string(), nullable=True),
    ]
)

KEY_COLUMNS = ("seed", "deal", "variant", "policy")
