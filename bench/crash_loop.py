"""Crash loop: SIGKILL the broker at random moments while producers with acks=all write numbered
records; afterwards every acknowledged record must be in the log exactly where its ack said,
byte-identical and in order.

    .venv/bin/python bench/crash_loop.py [--rounds 100] [--producers 2] [--flush fsync|page-cache]

Theory of operation. One partition per producer, so each producer's order is the partition's.
A producer is a raw-protocol client (minibroker_protocol.codec + RecordBatch v2 from minibroker_protocol.records.v2)
that pipelines up to `max_in_flight` Produce requests (acks=-1). Record `seq` of producer `p` has
key `p:seq` and a value derived from (p, seq) alone, so any byte read back can be checked against
what was sent. When the connection breaks (the broker was killed), the batches without an answer
are sent again, in order, once the broker is back, as a Kafka producer retries. By default the
producers are idempotent (InitProducerId, producer id/epoch and base sequence in each batch; the
sequence is the record number): a retry of a batch that was written before the kill must be
answered with its original offsets and not stored again. One exception, Kafka's too: the broker
remembers the last five batches of a producer, but a producer snapshot (written after each
unclean recovery, ProducerSnapshot v1) keeps only the last one, so after two unclean restarts
in a row an older retried batch is unknown and gets OUT_OF_ORDER_SEQUENCE_NUMBER. The producer
then does what librdkafka and the Java client do: takes a new producer id and renumbers from
that batch, which may store it again. So the run requires no duplicate except of records re-sent
after such a reset (`unexplained_duplicates` = 0), and counts the resets. With --no-idempotence a written batch whose ack was lost is stored twice;
that is counted as a duplicate, not a failure. A lost acknowledged record is always the failure.

Each round: start the broker (recovery runs on the kill's leftovers), let the producers run for a
random 0.05-0.6 s, SIGKILL. After the rounds: the segment files are scanned raw (every batch
whole, CRC-32C valid, offsets contiguous; a torn tail is measured), then the broker is started once
more and every partition is read back with Fetch, then stopped cleanly. The check:

- lost: an acknowledged record that is not at the offset its ack gave, or not byte-identical;
- order: acknowledged offsets increase with the sequence number;
- duplicates: records stored more than once (0 with idempotence; else retries of unacknowledged
  sends);
- garbage: a record that no producer sent (must be 0).

What this does and does not prove: SIGKILL kills the process, not the machine. Bytes the broker
wrote are in the kernel's page cache and survive a process kill with or without fsync, so with
Kafka's default flush policy (no fsync; flush.messages = Long.MAX_VALUE) this loop passes too
(`--flush page-cache`). Only `log.flush.interval.messages=1` (fsync before the ack, the default
here) also covers a power loss or kernel crash, and that case needs a machine crash to test; Kafka
itself relies on replication, not fsync, for it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from minibroker_protocol.apis import create_topics, fetch, init_producer_id, produce  # noqa: E402
from minibroker_protocol.codec import decode, encode  # noqa: E402
from minibroker_protocol.headers import RequestHeader, encode_request_header, response_header_version  # noqa: E402
from minibroker_protocol.records.batch import BatchView, InvalidBatch  # noqa: E402
from minibroker_protocol.records.v2 import Record, build_batch, decode_batches  # noqa: E402

PRODUCE_V = 9
FETCH_V = 12
# The broker no longer has the batch a retry repeats (ProducerSnapshot keeps one batch per
# producer, so after two unclean restarts in a row an older retried batch is unknown).
_SEQUENCE_ERRORS = frozenset({45, 47, 59})  # OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID
FSYNC_OVERRIDES = {"log.flush.interval.messages": 1}


class BrokerLike(Protocol):
    port: int
    data_dir: Path

    def start(self, timeout: float = ...) -> str: ...
    def kill(self) -> None: ...
    def stop(self, timeout: float = ...) -> int: ...


# -- records -----------------------------------------------------------------------------------


def record_key(producer: int, seq: int) -> bytes:
    return b"%d:%d" % (producer, seq)


def record_value(producer: int, seq: int) -> bytes:
    """10-500 bytes that depend on (producer, seq) only: any stored byte can be checked."""
    digest = hashlib.sha256(record_key(producer, seq)).digest()
    n = 10 + int.from_bytes(digest[:2], "big") % 490
    return (digest * (n // len(digest) + 1))[:n]


def parse_key(key: bytes | None) -> tuple[int, int] | None:
    try:
        p, s = (key or b"").split(b":")
        return int(p), int(s)
    except ValueError:
        return None


# -- a minimal pipelining client -----------------------------------------------------------------


class Wire:
    """A blocking socket speaking the Kafka protocol: send many requests, read answers in order."""

    def __init__(self, port: int, timeout: float):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.cid = 0

    def send(self, api: Any, version: int, body: Any) -> int:
        self.cid += 1
        out = bytearray()
        encode_request_header(out, RequestHeader(api.key, version, self.cid, "crash-loop"))
        out += encode(api.request, version, body).to_bytes()
        self.sock.sendall(struct.pack(">i", len(out)) + bytes(out))
        return self.cid

    def recv(self, api: Any, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", self._exactly(4))[0]
        frame = self._exactly(size)
        pos = 4 + (1 if response_header_version(api.key, version) >= 1 else 0)
        return struct.unpack_from(">i", frame)[0], decode(api.response, version, frame, pos)

    def call(self, api: Any, version: int, body: Any) -> Any:
        cid = self.send(api, version, body)
        got, resp = self.recv(api, version)
        if got != cid:
            raise EOFError(f"correlation id {got}, expected {cid}")
        return resp

    def _exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


# -- producers ---------------------------------------------------------------------------------


@dataclass
class Producer:
    """One producer writing records 0, 1, 2, ... to its own partition, acks=-1."""

    index: int
    topic: str
    port: int
    batch_records: int = 5
    max_in_flight: int = 5
    idempotent: bool = True
    producer_id: int = -1
    producer_epoch: int = -1
    seq_base: int = 0  # record number that is sequence 0 of the current producer id
    resets: int = 0  # new producer ids after a sequence error
    resent_after_reset: set[int] = field(default_factory=set)  # records that may legitimately be stored twice
    acked: dict[int, int] = field(default_factory=dict)  # seq -> offset the ack gave
    sent_batches: int = 0
    errors: dict[int, int] = field(default_factory=dict)  # error code -> count
    next_seq: int = 0
    _retry: deque[list[int]] = field(default_factory=deque)
    _inflight: deque[tuple[int, list[int]]] = field(default_factory=deque)

    def request(self, seqs: list[int]) -> Any:
        now = int(time.time() * 1000)
        # Record seq n is the producer's sequence number n: one partition per producer.
        batch = build_batch([Record(timestamp_delta=0, offset_delta=i, key=record_key(self.index, s),
                                    value=record_value(self.index, s)) for i, s in enumerate(seqs)],
                            base_timestamp=now, producer_id=self.producer_id, producer_epoch=self.producer_epoch,
                            base_sequence=seqs[0] - self.seq_base if self.idempotent else -1)
        R = produce.REQUEST
        return R(transactional_id=None, acks=-1, timeout_ms=10_000, topic_data=[R.TopicProduceData(
            name=self.topic, partition_data=[R.PartitionProduceData(index=self.index, records=batch)])])

    def run(self, stop: threading.Event) -> None:
        wire: Wire | None = None
        while not stop.is_set():
            if wire is None:
                try:
                    wire = Wire(self.port, timeout=2.0)
                    if self.idempotent and self.producer_id < 0:
                        self._init_producer_id(wire)
                except (OSError, EOFError):
                    if wire is not None:
                        wire.close()
                        wire = None
                    time.sleep(0.02)
                    continue
            try:
                while len(self._inflight) < self.max_in_flight:
                    if self._retry:
                        seqs = self._retry.popleft()
                    else:
                        seqs = list(range(self.next_seq, self.next_seq + self.batch_records))
                        self.next_seq += self.batch_records
                    self._inflight.append((wire.send(produce.API, PRODUCE_V, self.request(seqs)), seqs))
                    self.sent_batches += 1
                cid, resp = wire.recv(produce.API, PRODUCE_V)
                want, seqs = self._inflight.popleft()
                if cid != want:
                    raise EOFError(f"answer {cid} to request {want}: out of order")
                [part] = resp.responses[0].partition_responses
                if part.error_code == 0:
                    for i, s in enumerate(seqs):
                        self.acked[s] = part.base_offset + i
                else:
                    # Retry it first, then what was in flight behind it, in order: with
                    # idempotence a gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER.
                    self.errors[part.error_code] = self.errors.get(part.error_code, 0) + 1
                    self._inflight.appendleft((want, seqs))
                    if self.idempotent and part.error_code in _SEQUENCE_ERRORS:
                        self._reset(seqs[0])
                    raise EOFError(f"error {part.error_code}")
            except (OSError, EOFError):
                wire.close()
                wire = None
                # Unanswered sends are retried first, in their order (a client without idempotence).
                self._retry.extendleft(reversed([s for _, s in self._inflight]))
                self._inflight.clear()
                time.sleep(0.01)
        if wire is not None:
            wire.close()
        self._retry.extendleft(reversed([s for _, s in self._inflight]))
        self._inflight.clear()

    def _reset(self, first_seq: int) -> None:
        """What librdkafka and the Java client do when the broker no longer knows a retried
        batch's sequence: a new producer id, sequences renumbered from the failed batch. The
        failed batch and everything unanswered behind it may then be stored a second time."""
        self.resets += 1
        self.producer_id = -1
        self.seq_base = first_seq
        for _, seqs in self._inflight:
            self.resent_after_reset.update(seqs)
        for seqs in self._retry:
            self.resent_after_reset.update(seqs)

    def _init_producer_id(self, wire: Wire) -> None:
        resp = wire.call(init_producer_id.API, 4, init_producer_id.REQUEST(
            transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
        if resp.error_code:
            raise EOFError(f"InitProducerId: error {resp.error_code}")
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch


# -- checks ------------------------------------------------------------------------------------


@dataclass
class ScanResult:
    batches: int = 0
    torn_tail_bytes: int = 0
    problems: list[str] = field(default_factory=list)


def scan_partition_dir(part_dir: Path) -> ScanResult:
    """Read every segment raw: whole batches with valid CRCs and contiguous offsets. Only the end
    of the last segment may hold a partial batch (a torn write), which recovery will cut."""
    res = ScanResult()
    logs = sorted(part_dir.glob("*.log"))
    expected: int | None = None
    for n, path in enumerate(logs):
        data = path.read_bytes()
        pos = 0
        base = int(path.name.split(".")[0])
        if expected is not None and base != expected:
            res.problems.append(f"{path.name}: starts at {base}, previous segment ended at {expected}")
        while pos < len(data):
            try:
                view = BatchView(data, pos)
                if not view.is_complete():
                    raise InvalidBatch("partial batch")
                view.validate()
            except InvalidBatch as e:
                if n == len(logs) - 1:
                    res.torn_tail_bytes = len(data) - pos
                else:
                    res.problems.append(f"{path.name}@{pos}: {e}")
                break
            if expected is not None and view.base_offset != expected:
                res.problems.append(f"{path.name}@{pos}: batch at offset {view.base_offset}, expected {expected}")
            expected = view.last_offset + 1
            res.batches += 1
            pos += view.size
    return res


def fetch_all(port: int, topic: str, partition: int, timeout: float = 30.0) -> list[tuple[int, bytes | None,
                                                                                          bytes | None]]:
    """Every record of a partition as (offset, key, value), read with Fetch from offset 0."""
    R = fetch.REQUEST
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = 0
    deadline = time.monotonic() + timeout
    wire = Wire(port, timeout=10.0)
    try:
        while time.monotonic() < deadline:
            resp = wire.call(fetch.API, FETCH_V, R(
                max_wait_ms=0, min_bytes=0, max_bytes=4 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                topics=[R.FetchTopic(topic=topic, partitions=[R.FetchPartition(
                    partition=partition, fetch_offset=offset, partition_max_bytes=4 << 20)])],
                forgotten_topics_data=[], rack_id=""))
            [p] = resp.responses[0].partitions
            if p.error_code:
                raise RuntimeError(f"fetch {topic}-{partition}@{offset}: error {p.error_code}")
            for batch in decode_batches(bytes(p.records or b"")):
                for r in batch.records:
                    if r.offset >= offset:
                        out.append((r.offset, r.key, r.value))
                offset = batch.next_offset
            if offset >= p.high_watermark:
                return out
        raise TimeoutError(f"could not read {topic}-{partition} to its end in {timeout}s")
    finally:
        wire.close()


@dataclass
class Verdict:
    acked: int = 0
    lost: int = 0
    out_of_order: int = 0
    duplicates: int = 0
    unexplained_duplicates: int = 0  # stored twice without a producer reset that allows it
    garbage: int = 0
    stored: int = 0
    unacked_stored: int = 0  # written, but the ack never reached the producer
    not_contiguous: int = 0
    examples: list[str] = field(default_factory=list)


def verify(producer: Producer, records: list[tuple[int, bytes | None, bytes | None]]) -> Verdict:
    v = Verdict(acked=len(producer.acked), stored=len(records))
    by_offset: dict[int, tuple[bytes | None, bytes | None]] = {}
    seen: dict[int, int] = {}
    for i, (off, key, value) in enumerate(records):
        if off != i:
            v.not_contiguous += 1
        by_offset[off] = (key, value)
        parsed = parse_key(key)
        if parsed is None or parsed[0] != producer.index or value != record_value(*parsed):
            v.garbage += 1
            if len(v.examples) < 5:
                v.examples.append(f"garbage at {off}: key={key!r}")
            continue
        seq = parsed[1]
        seen[seq] = seen.get(seq, 0) + 1
    v.duplicates = sum(n - 1 for n in seen.values())
    v.unexplained_duplicates = sum(n - 1 for s, n in seen.items() if s not in producer.resent_after_reset)
    v.unacked_stored = sum(1 for s in seen if s not in producer.acked)
    last = -1
    for seq in sorted(producer.acked):
        off = producer.acked[seq]
        want = (record_key(producer.index, seq), record_value(producer.index, seq))
        if by_offset.get(off) != want:
            v.lost += 1
            if len(v.examples) < 5:
                v.examples.append(f"acked seq {seq} at offset {off}: stored {by_offset.get(off)!r:.80}")
        if off <= last:
            v.out_of_order += 1
        last = off
    return v


# -- the loop ------------------------------------------------------------------------------------


def create_topic(port: int, topic: str, partitions: int, timeout: float = 20.0) -> None:
    R = create_topics.REQUEST
    wire = Wire(port, timeout=timeout)
    try:
        resp = wire.call(create_topics.API, 7, R(topics=[R.CreatableTopic(
            name=topic, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=10_000, validate_only=False))
    finally:
        wire.close()
    if resp.topics[0].error_code not in (0, 36):  # 36: TOPIC_ALREADY_EXISTS
        raise RuntimeError(f"CreateTopics: error {resp.topics[0].error_code}")


@dataclass
class Report:
    rounds: int
    producers: int
    flush: str
    idempotent: bool
    seconds: float
    acked: int
    lost: int
    out_of_order: int
    duplicates: int
    unexplained_duplicates: int
    producer_resets: int
    garbage: int
    not_contiguous: int
    stored: int
    unacked_stored: int
    torn_tail_bytes: int
    scan_problems: list[str]
    examples: list[str]
    retried_errors: dict[int, int]

    @property
    def ok(self) -> bool:
        return not (self.lost or self.out_of_order or self.garbage or self.not_contiguous or self.scan_problems
                    or (self.idempotent and self.unexplained_duplicates))


def crash_loop(broker: BrokerLike, *, rounds: int, producers: int = 2, topic: str = "crash-loop",
               seed: int | None = None, min_run: float = 0.05, max_run: float = 0.6,
               flush: str = "fsync", idempotent: bool = True,
               progress: Callable[[str], None] | None = None) -> Report:
    """Run the loop against `broker` (started and killed here); the broker must have been built
    with the overrides of `flush` (FSYNC_OVERRIDES for "fsync")."""
    rng = random.Random(seed)
    t0 = time.monotonic()
    broker.start()
    create_topic(broker.port, topic, producers)
    prods = [Producer(i, topic, broker.port, idempotent=idempotent) for i in range(producers)]
    stop = threading.Event()
    threads = [threading.Thread(target=p.run, args=(stop,), daemon=True, name=f"producer-{p.index}")
               for p in prods]
    for th in threads:
        th.start()
    try:
        for r in range(rounds):
            if r:
                broker.start()
            # Kill at a random moment once the producers are writing again.
            acked_before = sum(len(p.acked) for p in prods)
            deadline = time.monotonic() + 10
            while sum(len(p.acked) for p in prods) == acked_before and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(min_run, max_run))
            broker.kill()
            if progress:
                progress(f"round {r + 1}/{rounds}: {sum(len(p.acked) for p in prods)} acked so far")
    finally:
        stop.set()
        for th in threads:
            th.join(10)
    scans = [scan_partition_dir(broker.data_dir / f"{topic}-{i}") for i in range(producers)]
    broker.start()
    try:
        verdicts = [verify(p, fetch_all(broker.port, topic, p.index)) for p in prods]
    finally:
        broker.stop()
    errors: dict[int, int] = {}
    for p in prods:
        for code, n in p.errors.items():
            errors[code] = errors.get(code, 0) + n
    return Report(
        rounds=rounds, producers=producers, flush=flush, idempotent=idempotent, seconds=round(time.monotonic() - t0, 1),
        acked=sum(v.acked for v in verdicts), lost=sum(v.lost for v in verdicts),
        out_of_order=sum(v.out_of_order for v in verdicts), duplicates=sum(v.duplicates for v in verdicts),
        unexplained_duplicates=sum(v.unexplained_duplicates for v in verdicts),
        producer_resets=sum(p.resets for p in prods),
        garbage=sum(v.garbage for v in verdicts), not_contiguous=sum(v.not_contiguous for v in verdicts),
        stored=sum(v.stored for v in verdicts), unacked_stored=sum(v.unacked_stored for v in verdicts),
        torn_tail_bytes=sum(s.torn_tail_bytes for s in scans),
        scan_problems=[p for s in scans for p in s.problems],
        examples=[e for v in verdicts for e in v.examples], retried_errors=errors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--flush", choices=["fsync", "page-cache"], default="fsync",
                    help="fsync: log.flush.interval.messages=1 (fsync before the ack); page-cache: Kafka's default")
    ap.add_argument("--no-idempotence", action="store_true",
                    help="plain producers: a retried send whose ack was lost is stored twice (counted)")
    ap.add_argument("--segment-bytes", type=int, default=None,
                    help="log.segment.bytes (small: rolls, producer snapshots and index recovery get killed too)")
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    from tests.helpers import BrokerProcess

    tmp = Path(tempfile.mkdtemp(prefix="crash-loop-")) if args.data_dir is None else args.data_dir
    overrides: dict[str, object] = dict(FSYNC_OVERRIDES) if args.flush == "fsync" else {}
    if args.segment_bytes:
        overrides["log.segment.bytes"] = args.segment_bytes
    broker = BrokerProcess(tmp / "data", overrides=overrides)
    report = crash_loop(broker, rounds=args.rounds, producers=args.producers, seed=args.seed, flush=args.flush,
                        idempotent=not args.no_idempotence, progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(json.dumps(report.__dict__, indent=2))
    print(f"rounds={report.rounds} acknowledged={report.acked} lost={report.lost} "
          f"duplicates={report.duplicates} (after {report.producer_resets} producer resets; unexplained: "
          f"{report.unexplained_duplicates}; unacked but stored: {report.unacked_stored}) "
          f"out_of_order={report.out_of_order} garbage={report.garbage} torn_tail_bytes={report.torn_tail_bytes} "
          f"flush={report.flush} idempotent={report.idempotent} in {report.seconds}s -> {'OK' if report.ok else 'FAIL'}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
