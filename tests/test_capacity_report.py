"""What `modelplane capacity` prints: each suggestion once, within 120 columns, and its progress."""

from __future__ import annotations

import itertools

import pytest

from modelplane import cli
from modelplane.report.capacity import WIDTH, table
from modelplane.scheduling.capacity import suggest
from tests.builders import cluster, deployment, exclusive_pool, fleet, workloads
from tests.test_cli_whatif import SCALED, run


def test_a_row_shows_only_the_edits_it_adds_to_the_rows_above() -> None:
    found = suggest(fleet(cluster("a", exclusive_pool("gpu", nodes=1))),
                    workloads(deployment("d1", replicas=2), deployment("d2")))
    assert [[str(e) for e in s.edits] for s in found.suggestions] == [
        ["pool a/gpu nodes=2"], ["pool a/gpu nodes=2", "pool a/gpu nodes=3"]], "JSON keeps every edit"
    lines = table(found).splitlines()
    assert lines[1].split() == ["ml/d1", "+1", "unpriced", "--what-if", "'pool", "a/gpu", "nodes=2'"]
    assert lines[2].split() == ["ml/d2", "+1", "unpriced", "--what-if", "'pool", "a/gpu", "nodes=3'"]
    assert table(found).count("nodes=2") == 1, "each edit is printed once"
    assert "Each suggestion adds to the first suggestion of every deployment above it" in table(found)


def test_a_table_wider_than_120_columns_becomes_a_block_per_suggestion_within_120_columns() -> None:
    # Names at their longest (40 characters, GKE's bound): the argument is 106 characters, which after
    # "  +1 node(s), unpriced: " on one line (the earlier layout) took 130 columns; indented 4, 110.
    cluster_name, pool_name = "c" * 40, "p" * 40
    found = suggest(fleet(cluster(cluster_name, exclusive_pool(pool_name, nodes=1))),
                    workloads(deployment("d", replicas=2)))
    text = table(found)
    assert all(len(line) <= WIDTH for line in text.splitlines()), text
    assert text.splitlines()[:3] == ["ml/d", "  +1 node(s), unpriced",
                                     f"    --what-if 'pool {cluster_name}/{pool_name} nodes=2'"]


def test_capacity_says_how_far_it_is_on_stderr_once_it_takes_over_two_seconds(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    clock = itertools.count(0, 3)  # every reading of the clock is 3 s after the last
    monkeypatch.setattr(cli.time, "monotonic", lambda: next(clock))
    code, _, err = run(capsys, "capacity", *SCALED)
    assert code == 0 and err == "capacity: searched 1/1 short deployment(s) (3 s)\n"
