"""Run a broker inside the calling process, for test suites, and look inside it without a client.

Two shapes, both on an ephemeral port in a temporary data directory that is removed on stop:

    async with AsyncBroker() as b:          # on the caller's running event loop
        ... b.bootstrap ...

    with BrokerThread() as b:               # on its own loop in a daemon thread, for sync code
        ... b.bootstrap ...

`overrides` takes Kafka config keys, e.g. `BrokerThread(overrides={"num.partitions": 3})`.

`security="SASL_SSL"` (or "SSL", "SASL_PLAINTEXT") adds a second listener of that protocol next to
PLAINTEXT, so an application's production security settings run against the broker: a test CA and
server certificate are made for it (minibroker.security.certs), PLAIN and SCRAM users from `users`
(default alice/alice-secret) are set up, and `b.client_config(mechanism)` returns the
confluent-kafka settings for it (`b.ca_file` is the CA to trust).
`b.broker` is the live broker, its `BrokerServer` (minibroker.server: the components are its
attributes); `b.call(fn)` runs `fn(broker)` on the broker's loop and returns its result.

Inspection helpers (both shapes) read the broker's state directly, the way a Fetch or an
OffsetFetch would see it, but without a client: `records(topic)`, `end_offsets(topic)`,
`committed(group, topic, partition)`, `lag(group, topic)`, `group(group_id)` (state, members,
assignments), `add_record(topic, value)` (appended as if a producer had
sent it), `assert_produces(topic)` (a context manager that yields the records produced inside
it) and wait helpers with timeouts (records, a commit, a group Stable with N members, a high
watermark). `b.faults` sets faults on the broker (minibroker.faults: errors, delays, closed
connections, a full disk, a paused broker; docs/testing.md). `Namespace` gives one test its own topic and group names on
a broker shared by a whole session (the pytest plugin, minibroker.pytest_plugin, hands one to
every test).

Theory of operation: every read goes through `Log.read`, the same path a Fetch takes, bounded by
the high watermark, and the batches are summarised by minibroker_protocol.records.dump (all record formats
and codecs; control batches of transactions are skipped, as consumers skip them). On a
BrokerThread the reads run on the broker's loop (`call`), so they never race an append; on an
AsyncBroker they run on the caller's loop, which is the broker's. Waiting is polling with a
deadline: simple, bounded, and it sees appends from any connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
import itertools
import re
import shutil
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

import uvloop

from minibroker.cluster_testing import Cluster, ClusterOps
from minibroker.config import BrokerConfig
from minibroker.faults.client import AsyncInjectedFault, BrokerFaults, InjectedFault
from minibroker.security.scram import credential_from_password
from minibroker.server import BrokerServer
from minibroker.tools.dump_log import consumer_protocol_schemas, decode_embedded
from minibroker_protocol.records import v2
from minibroker_protocol.records.dump import Trailing, iter_summaries

if TYPE_CHECKING:
    from minibroker_storage.log import Log

T = TypeVar("T")
# A config value as tests write it (`_fmt` turns it into Kafka's text: true/false, a,b,c lists).
ConfigValue: TypeAlias = str | int | float | bool | Sequence[str | int]
# A librdkafka (confluent-kafka) setting: its config dict takes text, numbers and booleans.
ClientConfig: TypeAlias = dict[str, str | int | bool]
DEFAULT_TIMEOUT = 10.0
_POLL_S = 0.005


def _config(data_dir: Path, host: str, port: int, overrides: dict[str, ConfigValue] | None) -> BrokerConfig:
    items = [f"{k}={_fmt(v)}" for k, v in (overrides or {}).items()]
    return BrokerConfig.load(None, items, host=host, port=port, data_dir=str(data_dir))


def _fmt(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


# Modules the start path imports lazily (BrokerServer.startup, the handler registry).
_START_PATH = ("minibroker.server",)


def preload() -> None:
    """Import everything the broker's start path needs, so that the first start pays no import
    cost (bench/startup.py measures start-to-ready after this). Pytest sessions get it for free
    when the session broker starts."""
    for name in _START_PATH:
        importlib.import_module(name)
    from minibroker.handlers.registry import load_all  # lazy: the broker's modules, with preload

    load_all()


# -- records as the broker stores them ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One record of a partition, as a consumer would receive it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _require_log(broker: BrokerServer, topic: str, partition: int) -> Log:
    lg = broker.get_log(topic, partition)
    if lg is None:
        raise KeyError(f"no partition {topic}-{partition} on this broker")
    return lg


def _partitions(broker: BrokerServer, topic: str, partition: int | None) -> list[int]:
    if partition is not None:
        return [partition]
    t = broker.topics.get(topic)
    if t is None:
        raise KeyError(f"no topic {topic!r} on this broker")
    return sorted(t.partitions)


def _read_records(broker: BrokerServer, topic: str, partition: int | None = None,
                  from_offsets: dict[int, int] | None = None) -> list[StoredRecord]:
    """Records below the high watermark, partition by partition, in offset order."""
    out: list[StoredRecord] = []
    for p in _partitions(broker, topic, partition):
        lg = _require_log(broker, topic, p)
        offset = max((from_offsets or {}).get(p, 0), lg.log_start_offset)
        hw = lg.high_watermark
        while offset < hw:
            info = lg.read(offset, 1 << 30)
            if info.region is None:
                break
            next_offset = offset
            for item in iter_summaries(info.region.read_all(), records=True):
                if isinstance(item, Trailing):
                    break
                next_offset = max(next_offset, item.last_offset + 1)
                if item.is_control:
                    continue
                for r in item.records or ():
                    if offset <= r.offset < hw:
                        out.append(StoredRecord(topic, p, r.offset, r.timestamp, r.key, r.value,
                                                tuple(r.headers)))
            if next_offset <= offset:
                break
            offset = next_offset
    return out


def _end_offsets(broker: BrokerServer, topic: str) -> dict[int, int]:
    return {p: _require_log(broker, topic, p).high_watermark for p in _partitions(broker, topic, None)}


def _start_offsets(broker: BrokerServer, topic: str) -> dict[int, int]:
    return {p: _require_log(broker, topic, p).log_start_offset for p in _partitions(broker, topic, None)}


def _committed(broker: BrokerServer, group: str, topic: str, partition: int) -> int | None:
    om = broker.group_coordinator.committed(group, topic, partition)
    return None if om is None else om.offset


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A classic consumer group as its coordinator holds it."""

    group_id: str
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    generation: int
    protocol_type: str | None
    protocol: str | None  # the chosen assignor, e.g. "range"
    leader: str | None
    members: tuple[str, ...]  # member ids
    assignments: dict[str, dict[str, list[int]]]  # member id -> topic -> partitions (consumer groups)


def _group(broker: BrokerServer, group_id: str) -> GroupInfo | None:
    g = broker.group_coordinator.groups.get(group_id)
    if g is None:
        return None
    assignments: dict[str, dict[str, list[int]]] = {}
    if g.protocol_type == "consumer":
        for mid, m in g.members.items():
            assignments[mid] = _consumer_assignment(bytes(m.assignment))
    return GroupInfo(g.group_id, g.state.value, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id,
                     tuple(g.members), assignments)


def _consumer_assignment(raw: bytes) -> dict[str, list[int]]:
    """topic -> partitions of a ConsumerProtocolAssignment ({} if empty or unreadable)."""
    if len(raw) < 2:
        return {}
    try:
        data = decode_embedded(consumer_protocol_schemas()[1], raw)
    except Exception:  # noqa: BLE001 - not the consumer protocol after all
        return {}
    return {tp["topic"]: list(tp["partitions"]) for tp in data["assignedPartitions"]}


def _lag(broker: BrokerServer, group: str, topic: str) -> dict[int, int]:
    out = {}
    for p in _partitions(broker, topic, None):
        lg = _require_log(broker, topic, p)
        c = _committed(broker, group, topic, p)
        out[p] = lg.high_watermark - (lg.log_start_offset if c is None else c)
    return out


def _create_topic(broker: BrokerServer, name: str, partitions: int, config: dict[str, ConfigValue] | None,
                  exist_ok: bool) -> str:
    if name in broker.topics:
        if exist_ok:
            return name
    overrides = broker.topics.check_new_topic(name, partitions, 1, {k: _fmt(v) for k, v in (config or {}).items()})
    broker.create_topic(name, partitions, overrides)
    return name


def _add_record(broker: BrokerServer, topic: str, value: bytes | str | None, key: bytes | str | None,
                partition: int, headers: Iterable[tuple[str, bytes | str | None]],
                timestamp: int | None) -> int:
    if topic not in broker.topics and broker.topics.maybe_auto_create_now(topic) is None:
        raise KeyError(f"no topic {topic!r} (and auto.create.topics.enable is off)")
    lg = _require_log(broker, topic, partition)
    ts = time.time_ns() // 1_000_000 if timestamp is None else timestamp
    rec = v2.Record(key=_b(key), value=_b(value), headers=[(k, _b(v)) for k, v in headers])
    info = broker.replica_manager.append(lg, v2.build_batch([rec], base_timestamp=ts))  # as Produce does
    return info.first_offset


def _b(v: bytes | str | None) -> bytes | None:
    return v.encode() if isinstance(v, str) else v


# -- the shared helper surface ------------------------------------------------------------------
class _Inspect(ABC):
    """Helpers that read state on the broker's loop; `_on_loop(fn)` returns fn(broker) there."""

    @abstractmethod
    def _on_loop(self, fn: Callable[[BrokerServer], T]) -> T:
        """Run fn(broker) on the broker's loop and return its result."""

    bootstrap: str

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, ConfigValue] | None = None, *,
                     exist_ok: bool = False) -> str:
        """Create `name` (Kafka's name and config rules apply) and return the name."""
        return self._on_loop(lambda b: _create_topic(b, name, partitions, config, exist_ok))

    def delete_topic(self, name: str) -> None:
        self._on_loop(lambda b: b.topics.delete(name))

    def topics(self) -> list[str]:
        """Names of the topics on the broker (internal ones included)."""
        return self._on_loop(lambda b: sorted(b.topics))

    def records(self, topic: str, partition: int | None = None) -> list[StoredRecord]:
        """Every record a read_uncommitted consumer could fetch now, by partition then offset."""
        return self._on_loop(lambda b: _read_records(b, topic, partition))

    def values(self, topic: str, partition: int | None = None) -> list[bytes | None]:
        return [r.value for r in self.records(topic, partition)]

    def end_offsets(self, topic: str) -> dict[int, int]:
        """High watermark of each partition (what ListOffsets LATEST answers)."""
        return self._on_loop(lambda b: _end_offsets(b, topic))

    def start_offsets(self, topic: str) -> dict[int, int]:
        """Log start offset of each partition (what ListOffsets EARLIEST answers)."""
        return self._on_loop(lambda b: _start_offsets(b, topic))

    def committed(self, group: str, topic: str, partition: int = 0) -> int | None:
        """The offset `group` committed for the partition, or None."""
        return self._on_loop(lambda b: _committed(b, group, topic, partition))

    def group(self, group_id: str) -> GroupInfo | None:
        """The group's state, generation, members and (for consumer groups) their assignments."""
        return self._on_loop(lambda b: _group(b, group_id))

    def lag(self, group: str, topic: str) -> dict[int, int]:
        """Records each partition holds past the group's committed offset (past the log start if
        the group committed nothing there), as kafka-consumer-groups.sh --describe counts LAG."""
        return self._on_loop(lambda b: _lag(b, group, topic))

    def add_record(self, topic: str, value: bytes | str | None, key: bytes | str | None = None, *,
                   partition: int = 0, headers: Iterable[tuple[str, bytes | str | None]] = (),
                   timestamp: int | None = None) -> int:
        """Append one record as a producer would (a RecordBatch v2 through the log's leader
        append, waking waiting fetches); returns its offset. Missing topics are auto-created when
        the broker allows it."""
        headers = list(headers)
        return self._on_loop(lambda b: _add_record(b, topic, value, key, partition, headers, timestamp))

    def high_watermark(self, topic: str, partition: int = 0) -> int:
        return self._on_loop(lambda b: _require_log(b, topic, partition).high_watermark)

    def isr(self, topic: str, partition: int = 0) -> list[int]:
        """The partition's in-sync replicas (node ids), as Metadata reports them."""
        return self._on_loop(lambda b: sorted(b.replica_manager.get_partition_or_error(topic, partition).isr))

    def _isr_reached(self, topic: str, partition: int, isr: Iterable[int]) -> Callable[[], bool]:
        wanted = sorted(isr)
        return lambda: self.isr(topic, partition) == wanted

    def _group_reached(self, group_id: str, state: str, members: int | None) -> Callable[[], bool]:
        def check() -> bool:
            g = self.group(group_id)
            return g is not None and g.state == state and (members is None or len(g.members) == members)
        return check

    def _hw_reached(self, topic: str, partition: int, offset: int) -> Callable[[], bool]:
        def reached(b: BrokerServer) -> bool:
            lg = b.get_log(topic, partition)
            return lg is not None and lg.high_watermark >= offset
        return lambda: self._on_loop(reached)

    def _snapshot(self, topic: str) -> dict[int, int]:
        return self._on_loop(lambda b: _end_offsets(b, topic) if topic in b.topics else {})

    def _new_since(self, topic: str, start: dict[int, int], partition: int | None) -> list[StoredRecord]:
        def read(b: BrokerServer) -> list[StoredRecord]:
            if topic not in b.topics:
                return []
            return _read_records(b, topic, partition, start)
        return self._on_loop(read)


class ProducesCheck:
    """`assert_produces`: records appended to a topic inside the block, checked on exit.

    The yielded list is filled when the block ends; the exit waits (up to `timeout`) for at
    least `count` new records, because a client's produce may still be in flight, and raises
    AssertionError if they do not arrive."""

    def __init__(self, owner: _Inspect, topic: str, count: int, partition: int | None, timeout: float,
                 allow_sync: bool):
        self.owner, self.topic, self.count, self.partition, self.timeout = owner, topic, count, partition, timeout
        self.records: list[StoredRecord] = []
        self._start: dict[int, int] = {}
        self._allow_sync = allow_sync

    def _begin(self) -> list[StoredRecord]:
        self._start = self.owner._snapshot(self.topic)
        return self.records

    def _poll(self) -> bool:
        self.records[:] = self.owner._new_since(self.topic, self._start, self.partition)
        return len(self.records) >= self.count

    def _fail(self) -> AssertionError:
        return AssertionError(f"expected at least {self.count} new record(s) in {self.topic!r} within "
                              f"{self.timeout}s, got {len(self.records)}")

    def __enter__(self) -> list[StoredRecord]:
        if not self._allow_sync:
            raise TypeError("the broker runs on this thread's loop: use `async with b.assert_produces(...)`")
        return self._begin()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None and not _poll_sync(self._poll, self.timeout):
            raise self._fail()

    async def __aenter__(self) -> list[StoredRecord]:
        return self._begin()

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None and not await _poll_async(self._poll, self.timeout):
            raise self._fail()


def _poll_sync(check: Callable[[], T | None], timeout: float) -> T | None:
    deadline = time.monotonic() + timeout
    while True:
        r = check()
        if r or time.monotonic() >= deadline:
            return r
        time.sleep(_POLL_S)


async def _poll_async(check: Callable[[], T | None], timeout: float) -> T | None:
    deadline = time.monotonic() + timeout
    while True:
        r = check()
        if r or time.monotonic() >= deadline:
            return r
        await asyncio.sleep(_POLL_S)


def _timeout_error(what: str, timeout: float) -> TimeoutError:
    return TimeoutError(f"{what} did not happen within {timeout}s")


# -- the two brokers ----------------------------------------------------------------------------
_SECURITY = ("SSL", "SASL_SSL", "SASL_PLAINTEXT")
_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# each SASL mechanism of a listener needs a JAAS config, as on Kafka (SCRAM's login module takes no options)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


class _Security:
    """The listener, certificates and users behind `security=`."""

    def __init__(self, protocol: str, host: str, users: dict[str, str] | None):
        if protocol not in _SECURITY:
            raise ValueError(f"security={protocol!r}: one of {', '.join(_SECURITY)}")
        self.protocol = protocol
        self.users = dict(users or {"alice": "alice-secret"})
        self.dir = Path(tempfile.mkdtemp(prefix="minibroker-certs-"))
        self.ca_file: Path | None = None
        props: dict[str, ConfigValue] = {"listeners": f"PLAINTEXT://{host}:0,{protocol}://{host}:0"}
        if protocol.endswith("SSL"):
            from minibroker.security.certs import write_certs  # lazy: cryptography, for TLS brokers only

            files = write_certs(self.dir, sorted({host, "localhost", "127.0.0.1"}))
            self.ca_file = files.ca
            props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(files.server_keystore),
                          "ssl.truststore.type": "PEM", "ssl.truststore.location": str(files.ca),
                          "ssl.client.auth": "requested"})
        if protocol.startswith("SASL"):
            entries = " ".join(f'user_{u}="{p}"' for u, p in self.users.items())
            props.update({"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                          f"listener.name.{protocol.lower()}.plain.sasl.jaas.config":
                          f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};",
                          **{f"listener.name.{protocol.lower()}.{m.lower()}.sasl.jaas.config": SCRAM_JAAS
                             for m in _SCRAM}})
        self.props = props

    def add_scram_users(self, broker: BrokerServer) -> None:
        broker.scram_credentials.apply([(u, m, credential_from_password(m, p)) for u, p in self.users.items()
                                        for m in _SCRAM], [])


class AsyncBroker(_Inspect):
    """A broker on the current event loop. Its wait helpers are coroutines (a blocking wait would
    stop the broker it waits for)."""

    def __init__(self, data_dir: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 overrides: dict[str, ConfigValue] | None = None, security: str | None = None,
                 users: dict[str, str] | None = None):
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="minibroker-"))
        self.security = _Security(security, host, users) if security is not None else None
        if self.security is not None:
            overrides = {**self.security.props, **(overrides or {})}
        self.host, self.port, self.overrides = host, port, overrides
        self.server: BrokerServer | None = None

    @property
    def ca_file(self) -> Path | None:
        """The test CA's certificate (PEM) that clients of a TLS listener trust."""
        return self.security.ca_file if self.security is not None else None

    def client_config(self, mechanism: str = "PLAIN", user: str | None = None) -> ClientConfig:
        """confluent-kafka (librdkafka) settings for the `security=` listener: bootstrap.servers,
        security.protocol, ssl.ca.location with host name verification, and for SASL the mechanism
        and the first user's (or `user`'s) credentials; for OAUTHBEARER librdkafka's own unsecured
        token for that user (Kafka's unsecured validator takes it)."""
        sec = self.security
        assert sec is not None, "the broker was started without security="
        conf: ClientConfig = {"bootstrap.servers": self.bootstrap_for(sec.protocol),
                                "security.protocol": sec.protocol}
        if sec.ca_file is not None:
            conf.update({"ssl.ca.location": str(sec.ca_file), "ssl.endpoint.identification.algorithm": "https"})
        if sec.protocol.startswith("SASL"):
            name = user or next(iter(sec.users))
            if mechanism == "OAUTHBEARER":
                conf.update({"sasl.mechanism": mechanism, "enable.sasl.oauthbearer.unsecure.jwt": True,
                             "sasl.oauthbearer.config": f"principal={name}"})
            else:
                conf.update({"sasl.mechanism": mechanism, "sasl.username": name, "sasl.password": sec.users[name]})
        return conf

    @property
    def bootstrap(self) -> str:  # type: ignore[override]
        assert self.server is not None, "the broker is not running"
        return self.server.bootstrap

    def bootstrap_for(self, listener: str) -> str:
        """host:port of the named listener (several in `listeners`: PLAINTEXT, SASL_PLAINTEXT, ...)."""
        assert self.server is not None, "the broker is not running"
        return self.server.bootstrap_for(listener)

    @property
    def broker(self) -> BrokerServer:
        assert self.server is not None, "the broker is not running"
        return self.server

    async def start(self) -> str:
        self.server = BrokerServer(_config(self.data_dir, self.host, self.port, self.overrides))
        await self.server.startup()
        if self.security is not None and self.security.protocol.startswith("SASL"):
            self.security.add_scram_users(self.broker)
        return self.bootstrap

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.shutdown()
            self.server = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        if self.security is not None:
            shutil.rmtree(self.security.dir, ignore_errors=True)

    async def __aenter__(self) -> AsyncBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _on_loop(self, fn: Callable[[BrokerServer], T]) -> T:
        return fn(self.broker)

    @property
    def faults(self) -> BrokerFaults[AsyncInjectedFault]:
        """Faults on this broker (minibroker.faults.client): `b.faults.inject("Produce", error=...)`."""
        return BrokerFaults(lambda fn: fn(self.broker.faults), AsyncInjectedFault)

    async def wait_for_group(self, group_id: str, state: str = "Stable", members: int | None = None,
                             timeout: float = DEFAULT_TIMEOUT) -> GroupInfo:
        """Wait until a classic group is in `state` (Kafka's name) with `members` members; return it."""
        await self.wait_for(self._group_reached(group_id, state, members), timeout,
                            f"group {group_id!r} {state} with {members} member(s)")
        g = self.group(group_id)
        assert g is not None
        return g

    async def wait_for_isr(self, topic: str, partition: int, isr: Iterable[int],
                           timeout: float = DEFAULT_TIMEOUT) -> list[int]:
        """Wait until the partition's ISR is exactly `isr` (node ids); return it."""
        await self.wait_for(self._isr_reached(topic, partition, isr), timeout, f"{topic}-{partition}'s ISR")
        return self.isr(topic, partition)

    async def wait_for_high_watermark(self, topic: str, partition: int, offset: int,
                                      timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait until the partition's high watermark is at least `offset`; return it."""
        await self.wait_for(self._hw_reached(topic, partition, offset), timeout,
                            f"{topic}-{partition}'s high watermark at {offset}")
        return self.high_watermark(topic, partition)

    def assert_produces(self, topic: str, count: int = 1, *, partition: int | None = None,
                        timeout: float = DEFAULT_TIMEOUT) -> ProducesCheck:
        """`async with b.assert_produces("t") as got:` ... `got` holds the new records after."""
        return ProducesCheck(self, topic, count, partition, timeout, allow_sync=False)

    async def wait_for(self, condition: Callable[[], T | None], timeout: float = DEFAULT_TIMEOUT,
                       what: str = "condition") -> T:
        """Poll `condition()` until it returns something truthy (returned) or time runs out."""
        r = await _poll_async(condition, timeout)
        if not r:
            raise _timeout_error(what, timeout)
        return r

    async def wait_for_records(self, topic: str, count: int, partition: int | None = None,
                               timeout: float = DEFAULT_TIMEOUT) -> list[StoredRecord]:
        """Wait until the topic (or partition) holds at least `count` records; return them all."""
        def check() -> list[StoredRecord] | None:
            recs = self._new_since(topic, {}, partition)
            return recs if len(recs) >= count else None
        return await self.wait_for(check, timeout, f"{count} record(s) in {topic!r}")

    async def wait_for_committed(self, group: str, topic: str, partition: int = 0, offset: int | None = None,
                                 timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait until `group` has a committed offset (at least `offset`, if given); return it."""
        def check() -> int | None:
            c = self.committed(group, topic, partition)
            return c if c is not None and (offset is None or c >= offset) else None
        r = await _poll_async(check, timeout)
        if r is None:
            raise _timeout_error(f"a commit by {group!r} on {topic}-{partition}", timeout)
        return r


class BrokerThread(_Inspect):
    """A broker on its own event loop in a daemon thread. Wait helpers block; their `_async`
    twins poll with asyncio.sleep, for tests running on an event loop of their own."""

    def __init__(self, data_dir: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 0,
                 overrides: dict[str, ConfigValue] | None = None, loop: str = "uvloop", security: str | None = None,
                 users: dict[str, str] | None = None):
        self._inner = AsyncBroker(data_dir, host=host, port=port, overrides=overrides, security=security,
                                  users=users)
        self._loop_kind = loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:  # type: ignore[override]
        return self._inner.bootstrap

    def bootstrap_for(self, listener: str) -> str:
        """host:port of the named listener (several in `listeners`: PLAINTEXT, SASL_PLAINTEXT, ...)."""
        return self._inner.bootstrap_for(listener)

    @property
    def ca_file(self) -> Path | None:
        return self._inner.ca_file

    def client_config(self, mechanism: str = "PLAIN", user: str | None = None) -> ClientConfig:
        """See AsyncBroker.client_config."""
        return self._inner.client_config(mechanism, user)

    @property
    def broker(self) -> BrokerServer:
        return self._inner.broker

    @property
    def data_dir(self) -> Path:
        return self._inner.data_dir

    def start(self, timeout: float = 30.0) -> str:
        ready: concurrent.futures.Future[str] = concurrent.futures.Future()

        def run() -> None:
            loop: asyncio.AbstractEventLoop
            if self._loop_kind == "uvloop":
                loop = uvloop.new_event_loop()
            else:
                loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                ready.set_result(loop.run_until_complete(self._inner.start()))
            except BaseException as e:  # noqa: BLE001 - handed to the starting thread
                ready.set_exception(e)
                return
            loop.run_forever()
            loop.run_until_complete(self._inner.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="minibroker", daemon=True)
        self._thread.start()
        return ready.result(timeout)

    @overload
    def call(self, fn: Callable[[BrokerServer], Awaitable[T]], timeout: float = 30.0) -> T: ...

    @overload
    def call(self, fn: Callable[[BrokerServer], T], timeout: float = 30.0) -> T: ...

    def call(self, fn: Callable[[BrokerServer], Awaitable[T] | T], timeout: float = 30.0) -> T:
        """Run fn(broker) on the broker's loop (awaiting it if it is a coroutine)."""
        assert self._loop is not None, "the broker is not running"

        async def invoke() -> T:
            r = fn(self.broker)
            if inspect.isawaitable(r):
                return await r
            return r

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout)

    def _on_loop(self, fn: Callable[[BrokerServer], T]) -> T:
        return self.call(fn)

    @property
    def faults(self) -> BrokerFaults[InjectedFault]:
        """Faults on this broker (minibroker.faults.client): `b.faults.inject("Produce", error=...)`,
        each change made on the broker's loop."""
        return BrokerFaults(lambda fn: self.call(lambda b: fn(b.faults)), InjectedFault)

    def wait_for_group(self, group_id: str, state: str = "Stable", members: int | None = None,
                       timeout: float = DEFAULT_TIMEOUT) -> GroupInfo:
        """Wait until a classic group is in `state` (Kafka's name) with `members` members; return it."""
        self.wait_for(self._group_reached(group_id, state, members), timeout,
                      f"group {group_id!r} {state} with {members} member(s)")
        g = self.group(group_id)
        assert g is not None
        return g

    def wait_for_isr(self, topic: str, partition: int, isr: Iterable[int],
                     timeout: float = DEFAULT_TIMEOUT) -> list[int]:
        """Wait until the partition's ISR is exactly `isr` (node ids); return it."""
        self.wait_for(self._isr_reached(topic, partition, isr), timeout, f"{topic}-{partition}'s ISR")
        return self.isr(topic, partition)

    def wait_for_high_watermark(self, topic: str, partition: int, offset: int,
                                timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait until the partition's high watermark is at least `offset`; return it."""
        self.wait_for(self._hw_reached(topic, partition, offset), timeout,
                      f"{topic}-{partition}'s high watermark at {offset}")
        return self.high_watermark(topic, partition)

    def stop(self, timeout: float = 30.0) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            self._loop = None
            self._thread = None

    def __enter__(self) -> BrokerThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def assert_produces(self, topic: str, count: int = 1, *, partition: int | None = None,
                        timeout: float = DEFAULT_TIMEOUT) -> ProducesCheck:
        """`with b.assert_produces("t") as got:` (or `async with`) ... `got` holds the new records."""
        return ProducesCheck(self, topic, count, partition, timeout, allow_sync=True)

    def wait_for(self, condition: Callable[[], T | None], timeout: float = DEFAULT_TIMEOUT,
                 what: str = "condition") -> T:
        """Poll `condition()` until it returns something truthy (returned) or time runs out."""
        r = _poll_sync(condition, timeout)
        if not r:
            raise _timeout_error(what, timeout)
        return r

    async def wait_for_async(self, condition: Callable[[], T | None], timeout: float = DEFAULT_TIMEOUT,
                             what: str = "condition") -> T:
        r = await _poll_async(condition, timeout)
        if not r:
            raise _timeout_error(what, timeout)
        return r

    def _records_check(self, topic: str, count: int, partition: int | None) -> Callable[[], list[StoredRecord] | None]:
        def check() -> list[StoredRecord] | None:
            recs = self._new_since(topic, {}, partition)
            return recs if len(recs) >= count else None
        return check

    def _committed_check(self, group: str, topic: str, partition: int, offset: int | None
                         ) -> Callable[[], int | None]:
        def check() -> int | None:
            c = self.committed(group, topic, partition)
            return c if c is not None and (offset is None or c >= offset) else None
        return check

    def wait_for_records(self, topic: str, count: int, partition: int | None = None,
                         timeout: float = DEFAULT_TIMEOUT) -> list[StoredRecord]:
        """Wait until the topic (or partition) holds at least `count` records; return them all."""
        return self.wait_for(self._records_check(topic, count, partition), timeout,
                             f"{count} record(s) in {topic!r}")

    async def wait_for_records_async(self, topic: str, count: int, partition: int | None = None,
                                     timeout: float = DEFAULT_TIMEOUT) -> list[StoredRecord]:
        return await self.wait_for_async(self._records_check(topic, count, partition), timeout,
                                         f"{count} record(s) in {topic!r}")

    def wait_for_committed(self, group: str, topic: str, partition: int = 0, offset: int | None = None,
                           timeout: float = DEFAULT_TIMEOUT) -> int:
        """Wait until `group` has a committed offset (at least `offset`, if given); return it."""
        r = _poll_sync(self._committed_check(group, topic, partition, offset), timeout)
        if r is None:
            raise _timeout_error(f"a commit by {group!r} on {topic}-{partition}", timeout)
        return r

    async def wait_for_committed_async(self, group: str, topic: str, partition: int = 0,
                                       offset: int | None = None, timeout: float = DEFAULT_TIMEOUT) -> int:
        r = await _poll_async(self._committed_check(group, topic, partition, offset), timeout)
        if r is None:
            raise _timeout_error(f"a commit by {group!r} on {topic}-{partition}", timeout)
        return r


# -- per-test names on a shared broker ----------------------------------------------------------
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]+")
_counter = itertools.count(1)


class Namespace:
    """One test's view of a shared broker: `topic("orders")` and `group("g")` give names no other
    test gets, `new_topic("orders", 3)` creates one; every other attribute is the broker's.

    The prefix is the test's name (letters, digits, '_' and '-'; no '.', so the one '.' that ends
    the prefix keeps names apart under Kafka's '.'/'_' collision rule) plus a process-wide
    counter."""

    def __init__(self, broker: _Inspect, label: str = "t"):
        short = _ILLEGAL.sub("-", label).strip("-")[:80] or "t"
        self.prefix = f"{short}-{next(_counter)}."
        self._broker = broker

    def topic(self, name: str) -> str:
        return self.prefix + name

    def group(self, name: str) -> str:
        return self.prefix + name

    def new_topic(self, name: str = "topic", partitions: int = 1, config: dict[str, ConfigValue] | None = None) -> str:
        """Create this test's topic `name`; returns the full name to give clients."""
        return self._broker.create_topic(self.topic(name), partitions, config)

    @property
    def broker_handle(self) -> _Inspect:
        return self._broker

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._broker, attr)

    def __repr__(self) -> str:
        return f"<Namespace {self.prefix!r} on {self._broker.bootstrap}>"


__all__ = ["AsyncBroker", "BrokerThread", "Cluster", "ClusterOps", "GroupInfo", "Namespace", "ProducesCheck", "StoredRecord", "preload"]
