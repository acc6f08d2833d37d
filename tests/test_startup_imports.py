"""What `python -m minibroker` imports before it serves its first request (issue 22: listening in
< 100 ms, most of which is importing). A fresh interpreter starts a PLAINTEXT broker the way the
CLI does (minibroker.cli.serve: BrokerConfig.load, BrokerServer.startup on uvloop) and lists
sys.modules right after the listener is up, before any request: the modules below are for tools,
tests, other listeners or the console, and must come only when something uses them. The list
fails the test if one of them creeps back into the start path (an import at the top of a module
the broker loads). bench/startup.py measures the time itself.

asyncio imports ssl itself (asyncio.sslproto, for loop.start_tls), so ssl cannot be kept out;
the broker's own TLS module (minibroker.security.tls) can."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NOT_AT_START = [
    # the web console and its HTTP server (only with --console-port)
    "aiohttp", "minibroker.console",
    # the schema registry and its schema libraries (only with --schema-registry-port)
    "minibroker.schema_registry", "avro", "jsonschema", "google.protobuf", "grpc_tools",
    # certificates (`python -m minibroker certs`), TLS and SASL listeners
    "cryptography", "minibroker.security.certs", "minibroker.security.tls", "minibroker.security.sasl",
    "minibroker.security.settings", "minibroker.security.plain", "minibroker.security.jaas",
    # SCRAM (hashlib, hmac, secrets): read with the first stored credential or SCRAM request
    "minibroker.security.scram",
    # the trace tool (--trace, the console's live trace) and the other tools
    "minibroker.tools.trace", "minibroker.tools.dump_log", "minibroker_protocol.records.dump",
    # reading installed packages' metadata (the crc32c package's __init__ does; minibroker_protocol.records.batch
    # loads its extension module alone)
    "importlib.metadata", "email",
    # KRaft roles (issue 29): the controller, the raft log and the broker's metadata follower, only
    # with process.roles
    "minibroker.kafka_raft_server", "minibroker.controller.quorum_controller", "minibroker.raft.metadata_log",
    "minibroker.metadata.metadata_loader", "minibroker.metadata.image",
    # the compression codecs (minibroker_protocol.records.compression imports each when a batch needs it)
    "lz4", "snappy", "cramjam", "zstandard",
    # glibc tuning through ctypes, set a second after listening (minibroker.cli)
    "ctypes", "minibroker.malloc_tuning",
    # the group, transaction and share-group coordinators: built after the broker listens, or by the
    # first request that needs one, or at start when their state is on disk (minibroker.coordinators)
    "minibroker.coordinator.group.group_coordinator", "minibroker.coordinator.group.consumer_group_manager",
    "minibroker.coordinator.group.group_metadata_manager", "minibroker.coordinator.group.records",
    "minibroker.coordinator.runtime.coordinator_runtime", "minibroker.coordinator.runtime.partition_writer",
    "minibroker.coordinator.runtime.coordinator_loader", "minibroker.coordinator.runtime.coordinator_store",
    "minibroker.coordinator.txn.transaction_coordinator", "minibroker.coordinator.txn.transaction_log",
    "minibroker.coordinator.share.share_group", "minibroker.coordinator.share.share_partition",
    "minibroker.coordinator.share.share_coordinator_shard", "minibroker.coordinator.group.classic_group",
    # the handlers other than ApiVersions' and the schemas of their APIs: imported by the first
    # request of their key (minibroker/handlers/api_table.py, minibroker_protocol.apis.api)
    *(f"minibroker.handlers.{m}" for m in (
        "acls", "admin", "client_quotas", "configs", "consumer_groups", "fetch", "groups", "legacy",
        "list_offsets", "metadata", "produce", "producer_ids", "security", "share_groups", "topics",
        "transactions")),
    *(f"minibroker_protocol.apis.{m}" for m in (
        "fetch", "metadata", "offset_commit", "join_group", "create_topics", "share_fetch", "describe_acls",
        "sasl_handshake", "init_producer_id", "describe_configs")),
    # the storage engine's append path and the record formats: imported by the first log opened or
    # created (minibroker_storage.log_manager), the cleaning by the first compacted log (minibroker.cleaner)
    "minibroker_storage.log", "minibroker_storage.log_validator", "minibroker_storage.producer_state", "minibroker_storage.segment", "minibroker_storage.segments",
    "minibroker_storage.cleaner", "minibroker_protocol.records.v2", "minibroker_protocol.records.validate", "minibroker_protocol.records.convert",
    "minibroker_protocol.records.compression", "minibroker_protocol.records.legacy",
    # a config file (--config) and what only tests, benches and tools use
    "yaml", "minibroker.testing", "minibroker.pytest_plugin", "pytest", "hypothesis", "prometheus_client",
    "confluent_kafka", "kafka", "aiokafka", "playwright", "matplotlib",
]

PROBE = r"""
import json, sys, tempfile, time
t0 = time.perf_counter()
from minibroker.cli import parse_args
from minibroker.config import BrokerConfig
from minibroker.server import BrokerServer
import uvloop

async def main():
    args = parse_args(["--port", "0", "--data-dir", tempfile.mkdtemp(), "--log-level", "WARNING"])
    config = BrokerConfig.load(args.config, args.override, host=args.host, port=args.port, data_dir=args.data_dir)
    server = BrokerServer(config)
    await server.startup()
    listening = time.perf_counter() - t0
    mods = sorted(sys.modules)
    await server.shutdown()
    return mods, listening

mods, listening = uvloop.run(main())
print(json.dumps({"modules": mods, "listening_ms": listening * 1000}))
"""


def test_start_path_imports_no_tool_test_console_or_tls_module() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    loaded = set(probe["modules"])
    crept_in = sorted(m for m in loaded if any(m == bad or m.startswith(bad + ".") for bad in NOT_AT_START))
    assert not crept_in, f"imported before the first request: {crept_in}"
    # the start path is there (the probe measured something real)
    assert {"minibroker.kafka_apis", "minibroker.handlers.api_versions", "minibroker_protocol.apis.api_versions"} <= loaded


def test_coordinators_know_the_internal_topics_and_files_their_state_is_in() -> None:
    """minibroker.coordinators decides by these names which coordinators load before the broker
    serves (their state is on disk); it does not import the coordinators' modules to read them."""
    from minibroker import coordinators
    from minibroker.coordinator.group import records
    from minibroker.coordinator.share import share_coordinator_shard, share_group
    from minibroker.coordinator.txn import transaction_log

    assert coordinators.OFFSETS_TOPIC == records.TOPIC
    assert coordinators.TRANSACTION_TOPIC == transaction_log.TOPIC
    assert coordinators.SHARE_STATE_TOPIC == share_coordinator_shard.TOPIC
    assert f'"{coordinators.SHARE_CONFIGS_FILE}"' in Path(share_group.__file__).read_text()


def test_broker_config_does_not_import_the_storage_append_path() -> None:
    """The CLI loads the config package before it binds the listeners; it needs only
    minibroker_storage.config (LogConfig), and the storage package's __init__ imports nothing, so the append
    path (minibroker_storage.log, the log validator, the record formats) comes after binding at the earliest."""
    code = ("import json, sys; import minibroker.config, minibroker_storage; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('minibroker_storage', 'minibroker_protocol.records')))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "minibroker_storage.config" in loaded
    assert not {"minibroker_storage.log", "minibroker_storage.log_validator", "minibroker_storage.producer_state", "minibroker_storage.segment",
                "minibroker_protocol.records.v2"} & set(loaded), loaded


def test_storage_public_names_resolve_lazily() -> None:
    import minibroker_storage as storage
    from minibroker_storage.log import Log
    from minibroker_storage.log_manager import LogManager

    assert storage.Log is Log and storage.LogManager is LogManager
    assert {name for name in storage.__all__ if getattr(storage, name) is None} == set()
    try:
        storage.NoSuchName  # noqa: B018
    except AttributeError:
        pass
    else:
        raise AssertionError("storage.NoSuchName resolved")
