"""Source tasks: loaders, the seeded selection (docs/protocol.md section 2) and ``takeover tasks select``."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATASET
from prerequisites import requires
from typer.testing import CliRunner

from takeover.cli import app
from takeover.errors import InputError
from takeover.sources.tasks import (
    PAPER_DIFFICULTIES,
    PAPER_LIMIT,
    PAPER_SEED,
    SourceTask,
    load_tasks,
    read_selection_header,
    select_tasks,
)

BUCKETS = ["15 min - 1 hour", "1-4 hours"]


def raw_rows() -> list[dict]:
    return [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]


@requires("shared:swebench_verified.jsonl")
def test_load_jsonl_keeps_every_row_and_field():
    rows = raw_rows()
    tasks = load_tasks(DATASET)
    assert len(tasks) == len(rows) == 500
    assert [t.instance_id for t in tasks] == [r["instance_id"] for r in rows]
    assert tasks[0].FAIL_TO_PASS == rows[0]["FAIL_TO_PASS"]
    assert tasks[0].model_extra["docker_image"] == rows[0]["docker_image"]  # unknown fields are kept


@requires("shared:swebench_verified.jsonl")
def test_json_parquet_and_hf_string_encoding_load_the_same(tmp_path):
    rows = raw_rows()[:20]
    hf_style = [
        dict(r, FAIL_TO_PASS=json.dumps(r["FAIL_TO_PASS"]), PASS_TO_PASS=json.dumps(r["PASS_TO_PASS"]))
        for r in rows
    ]
    (tmp_path / "d.json").write_text(json.dumps(hf_style))
    pq.write_table(
        pa.Table.from_pylist([{k: v for k, v in r.items() if k != "_provenance"} for r in hf_style]),
        tmp_path / "d.parquet",
    )
    base = [(t.instance_id, t.FAIL_TO_PASS, t.PASS_TO_PASS, t.difficulty) for t in load_tasks(DATASET)[:20]]
    for name in ("d.json", "d.parquet"):
        got = load_tasks(tmp_path / name)
        assert [(t.instance_id, t.FAIL_TO_PASS, t.PASS_TO_PASS, t.difficulty) for t in got] == base


@requires("shared:swebench_verified.jsonl")
def test_bad_rows_name_file_line_and_field(tmp_path):
    lines = DATASET.read_text().splitlines()[:5]
    row = json.loads(lines[3])
    del row["base_commit"]
    lines[3] = json.dumps(row)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert (info.value.path, info.value.record, info.value.field) == (str(path), "line 4", "base_commit")

    row = json.loads(lines[0])
    row["FAIL_TO_PASS"] = "not json ["
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([json.loads(lines[1]), row]))
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert (info.value.record, info.value.field) == ("index 1", "FAIL_TO_PASS")

    path = tmp_path / "cut.jsonl"
    path.write_text(lines[0] + "\n" + lines[1][:100])
    with pytest.raises(InputError) as info:
        load_tasks(path)
    assert info.value.record == "line 2"


def test_a_missing_file_with_a_suffix_is_not_taken_for_a_dataset_name():
    # ``datasets`` is always installed (mini-swe-agent requires it): only a name without a suffix is one.
    with pytest.raises(InputError, match="no such file"):
        load_tasks("missing/file.jsonl")


@pytest.mark.slow
def test_dataset_name_offline_is_a_clear_error(tmp_path):
    code = "from takeover.sources.tasks import load_tasks; load_tasks('princeton-nlp/SWE-bench_Verified')"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, check=False, capture_output=True, text=True)
    assert proc.returncode != 0
    assert (
        "EnvironmentUnavailable: could not load Hugging Face dataset 'princeton-nlp/SWE-bench_Verified'"
        in proc.stderr
    )
    assert "Pass a local .jsonl/.json/.parquet file instead" in proc.stderr


@requires("shared:swebench_verified.jsonl")
def test_select_tasks_follows_protocol_section_2():
    tasks = load_tasks(DATASET)
    chosen = select_tasks(tasks, BUCKETS, PAPER_SEED, PAPER_LIMIT)
    # Independent restatement of the rule: filter, sort by instance_id, random.Random(seed).shuffle, first N.
    ids = sorted(r["instance_id"] for r in raw_rows() if r["difficulty"] in BUCKETS)
    assert len(ids) == 303
    random.Random(PAPER_SEED).shuffle(ids)
    assert [t.instance_id for t in chosen] == ids[:75]
    # Row order of the dataset does not matter.
    assert select_tasks(list(reversed(tasks)), BUCKETS, PAPER_SEED, PAPER_LIMIT) == chosen
    assert select_tasks(tasks, BUCKETS, PAPER_SEED + 1, PAPER_LIMIT) != chosen
    assert len(select_tasks(tasks, BUCKETS, PAPER_SEED, None)) == 303
    assert tuple(BUCKETS) == PAPER_DIFFICULTIES


@requires("shared:swebench_verified.jsonl")
def test_tasks_select_command_is_reproducible(tmp_path):
    runner = CliRunner()
    outs = [tmp_path / "a" / "tasks.jsonl", tmp_path / "b" / "tasks.jsonl"]
    for out in outs:
        result = runner.invoke(
            app,
            [
                "tasks",
                "select",
                "--dataset",
                str(DATASET),
                "--difficulty",
                BUCKETS[0],
                "--difficulty",
                BUCKETS[1],
                "--seed",
                str(PAPER_SEED),
                "--limit",
                "75",
                "--out-dir",
                str(out.parent),
            ],
        )
        assert result.exit_code == 0, result.output
        assert "selected 75 of 303" in result.output
        assert "django/django" in result.output and "1-4 hours" in result.output
    assert outs[0].read_bytes() == outs[1].read_bytes()
    lines = outs[0].read_text().splitlines()
    header = json.loads(lines[0])
    assert header == {
        "takeover_selection": 1,
        "dataset": str(DATASET),
        "dataset_sha256": hashlib.sha256(DATASET.read_bytes()).hexdigest(),
        "difficulties": BUCKETS,
        "seed": PAPER_SEED,
        "limit": 75,
        "candidates": 303,
        "count": 75,
    }
    assert len(lines) == 76
    # The selection file loads again as tasks (header skipped) and equals the Python API's selection.
    again = load_tasks(outs[0])
    assert [t.instance_id for t in again] == [
        t.instance_id for t in select_tasks(load_tasks(DATASET), BUCKETS, PAPER_SEED, 75)
    ]
    assert isinstance(again[0], SourceTask) and again[0].FAIL_TO_PASS
    assert read_selection_header(outs[0]).dataset_sha256 == header["dataset_sha256"]
    assert read_selection_header(DATASET) is None
    # Per-repo counts printed match the file.
    django = sum(1 for t in again if t.repo == "django/django")
    assert (
        f"django/django             │    {django} │"
        in runner.invoke(
            app, ["tasks", "select", "--dataset", str(DATASET), "--out-dir", str(tmp_path / "c")]
        ).output
    )


def test_tasks_select_bad_dataset_exits_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x__y-1", "repo": "x/y"}\n')
    result = CliRunner().invoke(
        app, ["tasks", "select", "--dataset", str(bad), "--out-dir", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert f"{bad}: line 1: field 'base_commit'" in result.output
    assert not (tmp_path / "o" / "tasks.jsonl").exists()
