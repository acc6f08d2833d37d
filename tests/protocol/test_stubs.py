"""The typed stubs (protocol/apis/*.pyi, protocol/coordinator_records.pyi, share_records.pyi) say
what the run time builds: rendered again from the imported schemas they must equal the checked-in
files (`python tools/gen_schemas.py --stubs` rewrites them), and the names they declare exist."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_schemas", ROOT / "tools" / "gen_schemas.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()
MODULES = GEN.stub_modules()


def test_every_schema_module_has_a_stub() -> None:
    from minibroker_protocol.apis import MODULES as API_MODULES

    assert {f"minibroker_protocol.apis.{m}" for m in API_MODULES} | {"minibroker_protocol.coordinator_records", "minibroker_protocol.share_records",
                                                            "minibroker_protocol.metadata_records", "minibroker_protocol.raft_records",
                                                            "minibroker_protocol.streams_group_records",
                                                            "minibroker_protocol.share_group_records"} \
        == set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_stub_matches_schemas(module: str) -> None:
    path = GEN.stub_path(module)
    assert path.read_text() == GEN.render_stub(module, MODULES[module]), (
        f"{path.name} is stale: run `python tools/gen_schemas.py --stubs`")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_stub_names_exist_at_run_time(module: str) -> None:
    mod = importlib.import_module(module)
    for var in MODULES[module]:
        schema = getattr(mod, var)
        cls = getattr(mod, schema.name)
        assert cls is schema.cls
        for name, struct in schema.classes.items():
            if name != schema.name:
                assert getattr(cls, name) is struct is getattr(schema, name)
    with pytest.raises(AttributeError):
        mod.NoSuchMessage  # noqa: B018


def test_struct_named_twice_in_one_message_is_one_class() -> None:
    # AddPartitionsToTxnTopicResult appears twice in the v4+ response (results_by_transaction and
    # results_by_topic_v3_and_below): the run time makes one class, and the stub declares one
    from minibroker_protocol.apis import add_partitions_to_txn as m

    R = m.RESPONSE
    by_txn = R.AddPartitionsToTxnResult(transactional_id="t", topic_results=[R.AddPartitionsToTxnTopicResult(name="a")])
    resp = R(results_by_transaction=[by_txn], results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(name="b")])
    assert type(resp.results_by_topic_v3_and_below[0]) is type(resp.results_by_transaction[0].topic_results[0])
    assert GEN.render_stub(m.__name__, ["REQUEST", "RESPONSE"]).count("class AddPartitionsToTxnTopicResult(") == 1


def test_field_types_in_a_stub() -> None:
    text = GEN.stub_path("minibroker_protocol.apis.fetch").read_text()
    assert "        records: BaseRecords | None\n" in text  # a response's records may be a file region
    assert "        topic_id: uuid.UUID\n" in text
    req = GEN.stub_path("minibroker_protocol.apis.produce").read_text()
    assert "        records: MemoryRecords | None\n" in req
    assert "    transactional_id: str | None\n" in req  # nullable
    assert "    acks: int\n" in req


def test_mypy_refuses_a_wrong_field_through_the_stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the point of the stubs: a handler's wrong field name or type is a type error, not an Any
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)  # mypy finds `protocol` (and its stubs) from the working directory
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from minibroker_protocol.apis import produce\n"
        "from minibroker_protocol.codec import decode\n"
        "def answer(req: produce.ProduceRequest) -> produce.ProduceResponse:\n"
        "    R = produce.RESPONSE\n"
        "    part = R.PartitionProduceResponse(index='0', error_kode=0)\n"  # 2 errors
        "    req.acks.upper()\n"  # int has no upper
        "    decode(produce.REQUEST, 9, b'').timeout\n"  # no such field
        "    return R(responses=[R.TopicProduceResponse(name='t', partition_responses=[part])])\n")
    out, _, status = api.run([str(snippet), "--no-incremental", "--cache-dir=/dev/null", "--config-file=",
                              "--python-version=3.11", "--no-error-summary"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1 and len(errors) == 4, out
    assert 'Argument "index"' in out and "error_kode" in out and "upper" in out and "timeout" in out, out
