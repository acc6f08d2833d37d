"""What the console shows, read from the broker's live components (never through a Kafka client).

Every function takes the `BrokerServices` the handlers get and returns plain dicts and lists, typed
by the TypedDicts of minibroker.console.shapes (the JSON endpoints serve them as they are; the pages
render them). They run on the broker's loop, so
they see each component between two requests, as a handler would. Reads of segment files are
bounded (`MAX_BATCHES`, `MAX_READ_BYTES`) so a page never stalls the loop for long.

Bad input raises `NotFound` (an unknown topic, partition, offset, group, segment) or `BadRequest`
(an offset or timestamp that is no number, or out of any range); the HTTP layer turns them into
404 and 400 pages.
"""

from __future__ import annotations

import json
import os
import struct
import time
import uuid
from collections.abc import Iterable

from minibroker.config.definitions import ConfigSource, as_list
from minibroker.console import record_page
from minibroker.console.shapes import (
    BatchBytesView,
    ClassicMember,
    ClusterView,
    CommittedOffset,
    ConfigValue,
    ConsumerGroupView,
    ConsumerMember,
    GroupRow,
    GroupView,
    HeldPartition,
    InFlightRecord,
    MessageBatch,
    MessagesView,
    OversizedBatch,
    PartitionSummary,
    PartitionView,
    ProducerRow,
    RecordView,
    SegmentBatch,
    SegmentSummary,
    SegmentView,
    ShareGroupView,
    ShareMember,
    SharePartitionView,
    ShownBytes,
    TimelineEvent,
    TopicPartitions,
    TopicRow,
    TopicView,
    TransactionRow,
    TransactionsView,
)
from minibroker.coordinator.group.consumer_group import ConsumerGroup, same_assignment
from minibroker.coordinator.share.share_group import ShareGroup
from minibroker.coordinator.share.share_group_configs import GROUP_KEYS as SHARE_GROUP_KEYS
from minibroker.partition import Partition
from minibroker.services import BrokerServices
from minibroker.tools.trace import batch_field_spans
from minibroker_protocol.records.batch import BatchView, InvalidBatch
from minibroker_protocol.records.dump import BatchSummary, RecordSummary, iter_summaries, summarize
from minibroker_storage.segment import LogSegment
from minibroker_storage.txn_index import AbortedTxn

MAX_BATCHES = 50
MAX_READ_BYTES = 4 * 1024 * 1024
MAX_SHOWN_VALUE = 4096  # bytes of a key or value rendered; the rest is counted
LONG_MAX = (1 << 63) - 1
_ATTR_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class NotFound(Exception):
    pass


class BadRequest(Exception):
    pass


def parse_int(text: str | None, what: str, *, lo: int = -(1 << 63), hi: int = LONG_MAX) -> int:
    if text is None:
        raise BadRequest(f"{what} is missing")
    try:
        v = int(text)
    except ValueError:
        raise BadRequest(f"{what} must be a whole number, not {text[:40]!r}") from None
    if not lo <= v <= hi:
        raise BadRequest(f"{what} {v} is out of range ({lo}..{hi})")
    return v


# -- cluster ---------------------------------------------------------------------------------------
def cluster(services: BrokerServices, served: Iterable[tuple[str, int, int, int]], bootstrap: str) -> ClusterView:
    cfg = services.config
    data_dir = services.log_manager.data_dir
    usage = _dir_usage(str(data_dir))
    sources = {int(s): s.name for s in ConfigSource}
    return {
        "cluster_id": services.cluster_id, "node_id": services.node_id, "listener": bootstrap,
        "advertised": f"{services.host}:{services.port}",
        "uptime_ms": services.clock() - services.started_ms, "started_ms": services.started_ms,
        "data_dir": str(data_dir), "data_dir_bytes": usage,
        "topics": len(services.metadata_cache),
        "partitions": sum(len(t.partitions) for t in services.metadata_cache.topics()),
        "apis": [{"name": n, "key": k, "min": lo, "max": hi} for n, k, lo, hi in sorted(served, key=lambda a: a[1])],
        "config": [{"name": e.name, "value": None if e.sensitive else e.value,
                    "source": sources.get(e.source, str(e.source)), "read_only": e.read_only}
                   for e in services.dynamic_config.describe_broker(cfg)],
    }


def _dir_usage(path: str) -> int:
    """Bytes the data dir takes on disk, as `du` counts them: the blocks allocated. An index is
    preallocated to segment.index.bytes (10 MiB) as a sparse file (Kafka's AbstractIndex does the
    same), so the apparent sizes of an almost empty dir add up to GiBs that are not used."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                st = os.stat(os.path.join(root, f))
            except OSError:
                continue
            blocks = getattr(st, "st_blocks", None)
            total += blocks * 512 if blocks is not None else st.st_size
    return total


# -- topics and partitions ------------------------------------------------------------------------
def topics(services: BrokerServices) -> list[TopicRow]:
    out: list[TopicRow] = []
    for t in sorted(services.metadata_cache.topics(), key=lambda t: t.name):
        name = t.name
        logs = services.replica_manager.partitions(name)
        out.append({"name": name, "topic_id": str(t.topic_id), "internal": t.is_internal,
                    "partitions": len(t.partitions), "size": sum(lg.size_in_bytes() for lg in logs),
                    "messages": sum(lg.high_watermark - lg.log_start_offset for lg in logs),
                    "cleanup_policy": ",".join(as_list("cleanup.policy", t.config.get("cleanup.policy", []))),
                    "overrides": {k: _kafka_text(v) for k, v in t.overrides.items()}})
    return out


def topic(services: BrokerServices, name: str) -> TopicView:
    t = services.metadata_cache.topic(name)
    if t is None:
        raise NotFound(f"no topic {name!r}")
    return {"name": name, "topic_id": str(t.topic_id), "internal": t.is_internal,
            "config": {k: _plain(v) for k, v in sorted(t.config.items())},
            "overrides": {k: _plain(v) for k, v in sorted(t.overrides.items())},
            "partitions": [_partition_summary(lg) for lg in services.replica_manager.partitions(name)]}


def _plain(v: object) -> ConfigValue:
    """A config value as Kafka's tools print it (ConfigDef.convertToString): `compact`, `true`."""
    return None if v is None else _kafka_text(v)


def _kafka_text(v: object) -> str:
    if isinstance(v, list):
        return ",".join(map(str, v))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def get_partition(services: BrokerServices, name: str, partition: str | int) -> Partition:
    t = services.metadata_cache.topic(name)
    if t is None:
        raise NotFound(f"no topic {name!r}")
    p = partition if isinstance(partition, int) else parse_int(partition, "partition", lo=0, hi=(1 << 31) - 1)
    lg = services.replica_manager.get_partition(name, p)
    if lg is None:
        raise NotFound(f"topic {name!r} has no partition {p} (it has {len(t.partitions)})")
    return lg


def _partition_summary(lg: Partition) -> PartitionSummary:
    return {"partition": lg.partition, "log_start_offset": lg.log_start_offset, "high_watermark": lg.high_watermark,
            "log_end_offset": lg.log_end_offset, "last_stable_offset": lg.last_stable_offset,
            "recovery_point": lg.recovery_point, "size": lg.size_in_bytes(), "segments": lg.num_segments}


def partition(services: BrokerServices, name: str, p: str) -> PartitionView:
    lg = get_partition(services, name, p)
    return {
        **_partition_summary(lg), "topic": name, "index_interval_bytes": lg.config.index_interval_bytes,
        "segment_bytes": lg.config.segment_bytes, "first_unstable_offset": lg.first_unstable_offset,
        "producers": [
            {"producer_id": pid, "epoch": e.producer_epoch, "last_sequence": e.last_seq if e.batches else -1,
             "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
             "open_txn_first_offset": e.current_txn_first_offset}
            for pid, e in sorted(lg.producers().items())],
        "segment_list": [_segment_summary(seg) for seg in lg.segments]}


def _segment_summary(seg: LogSegment) -> SegmentSummary:
    first_ts = -1
    first = seg.log.header_at(0) if seg.size else None
    if first is not None:
        first_ts = first.max_timestamp
    return {"base_offset": seg.base_offset, "size": seg.size, "file": seg.log.path.name,
            "first_batch_max_timestamp": first_ts, "max_timestamp": seg.max_timestamp_so_far,
            "index_entries": seg.offset_index.entries, "time_index_entries": seg.time_index.entries}


def segment(services: BrokerServices, name: str, p: str, base: str) -> SegmentView:
    lg = get_partition(services, name, p)
    base_offset = parse_int(base, "segment base offset", lo=0)
    seg = lg.segments.get(base_offset)
    if seg is None:
        raise NotFound(f"{name}-{lg.partition} has no segment with base offset {base_offset} "
                       f"(it has {[s.base_offset for s in lg.segments][:20]})")
    # every batch position, so the index's sparseness shows against what it indexes
    batches: list[SegmentBatch] = []
    for pos, view in seg.log.batches_from(0):
        batches.append({"position": pos, "base_offset": view.base_offset, "last_offset": view.last_offset,
                        "size": view.size, "max_timestamp": view.max_timestamp})
        if len(batches) >= 5000:
            break
    return {**_segment_summary(seg), "topic": name, "partition": lg.partition,
            "index_interval_bytes": lg.config.index_interval_bytes,
            "index": [{"offset": e.offset, "position": e.position} for e in seg.offset_index.all_entries()],
            "time_index": [{"timestamp": e.timestamp, "offset": e.offset} for e in seg.time_index.all_entries()],
            "batches": batches}


# -- messages --------------------------------------------------------------------------------------
def messages(services: BrokerServices, name: str, p: str, *, offset: str | None = None,
             timestamp: str | None = None, limit: str | None = None) -> MessagesView:
    lg = get_partition(services, name, p)
    count = parse_int(limit, "limit", lo=1, hi=MAX_BATCHES) if limit is not None else 10
    if timestamp is not None:
        ts = parse_int(timestamp, "timestamp")
        found = lg.offset_for_timestamp(ts)
        start = found.offset if found is not None else lg.log_end_offset
    else:
        start = parse_int(offset, "offset") if offset is not None else lg.log_start_offset
    if start < lg.log_start_offset or start > lg.log_end_offset:
        raise NotFound(f"offset {start} is outside {name}-{lg.partition}'s log "
                       f"[{lg.log_start_offset}, {lg.log_end_offset})")
    aborted = lg.aborted_transactions(start, LONG_MAX)
    batches: list[MessageBatch | OversizedBatch] = []
    budget = record_page.MAX_PAGE_RECORDS
    for pos, view, seg in _batch_positions(lg, start):
        buf = seg.log.read(pos, min(view.size, MAX_READ_BYTES))
        if len(buf) < view.size:
            batches.append({"position": pos, "base_offset": view.base_offset, "size": view.size,
                            "error": f"batch larger than {MAX_READ_BYTES} bytes, not shown"})
        elif view.magic >= 2:
            # records decoded lazily, within the page's budget (minibroker.console.record_page)
            stored = BatchView(buf, 0)
            head = summarize(stored, records=False, position=pos)
            head.records, truncated, error = record_page.v2_records(stored, budget)
            head.error = head.error or error
            batch = _batch(head, view, lg, aborted, seg.base_offset)
            batch["records_truncated"] = truncated
            batches.append(batch)
            budget -= len(head.records)
        else:
            for s in iter_summaries(buf, records=True, position=pos, max_size=record_page.MAX_PAGE_DECOMPRESSED):
                if isinstance(s, BatchSummary):
                    batches.append(_batch(s, view, lg, aborted, seg.base_offset))
                    budget -= len(s.records or [])
        if len(batches) >= count or budget <= 0:
            break
    return {"topic": name, "partition": lg.partition, "start": start, "log_start_offset": lg.log_start_offset,
            "high_watermark": lg.high_watermark, "last_stable_offset": lg.last_stable_offset,
            "log_end_offset": lg.log_end_offset, "batches": batches}


def _batch_positions(lg: Partition, start: int) -> Iterable[tuple[int, BatchView, LogSegment]]:
    seg = lg.segments.floor_segment(start) or lg.segments.first
    first = True
    while seg is not None:
        found = seg.translate_offset(start) if first else (0, None)
        first = False
        if found is not None:
            for pos, view in seg.log.batches_from(found[0]):
                yield pos, view, seg
        seg = lg.segments.higher_segment(seg.base_offset)


def _batch(s: BatchSummary, view: BatchView, lg: Partition, aborted: list[AbortedTxn], segment_base: int) -> MessageBatch:
    attrs = view.attributes
    is_aborted = s.is_transactional and not s.is_control and any(
        a.producer_id == s.producer_id and a.first_offset <= s.base_offset <= a.last_offset for a in aborted)
    return {
        "position": s.position, "segment": segment_base, "base_offset": s.base_offset,
        "last_offset": s.last_offset, "batch_length": view.batch_length, "size": s.size,
        "partition_leader_epoch": s.partition_leader_epoch, "magic": s.magic, "crc": s.crc, "crc_valid": s.is_valid,
        "attributes": attrs, "codec": s.codec_name.lower(),
        "timestamp_type": {-1: "none", 0: "CreateTime", 1: "LogAppendTime"}.get(s.timestamp_type, "?"),
        "transactional": s.is_transactional, "control": s.is_control, "aborted": is_aborted,
        "above_high_watermark": s.base_offset >= lg.high_watermark,
        "above_last_stable_offset": s.base_offset >= lg.last_stable_offset,
        "base_timestamp": s.base_timestamp, "max_timestamp": s.max_timestamp, "producer_id": s.producer_id,
        "producer_epoch": s.producer_epoch, "base_sequence": s.base_sequence, "record_count": s.count,
        "error": s.error,
        "records": [_record(r, s) for r in (s.records or [])],
    }


def _record(r: RecordSummary, s: BatchSummary) -> RecordView:
    out: RecordView = {
        "offset": r.offset, "offset_delta": r.offset - s.base_offset, "timestamp": r.timestamp,
        "timestamp_delta": r.timestamp - s.base_timestamp if s.magic == 2 else None,
        "key": show_bytes(r.key), "value": show_bytes(r.value),
        "headers": [{"key": k, "value": show_bytes(v)} for k, v in r.headers],
    }
    if r.control is not None:
        out["control"] = {"type": {0: "ABORT", 1: "COMMIT"}.get(r.control.type, str(r.control.type)),
                          "coordinator_epoch": r.control.coordinator_epoch}
    return out


def show_bytes(b: bytes | None) -> ShownBytes | None:
    """A key or value as text (when it is UTF-8), JSON (when it parses) and hex."""
    if b is None:
        return None
    shown = bytes(b[:MAX_SHOWN_VALUE])
    try:
        text: str | None = shown.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    out: ShownBytes = {"size": len(b), "hex": shown.hex(), "truncated": len(b) > MAX_SHOWN_VALUE, "text": text}
    if text is not None and not out["truncated"]:
        try:
            out["json"] = json.loads(text)
        except ValueError:
            pass
    return out


def batch_bytes(services: BrokerServices, name: str, p: str, offset: str) -> BatchBytesView:
    """The batch holding `offset`, byte by byte, each field labelled (seeds 002 and 004)."""
    lg = get_partition(services, name, p)
    target = parse_int(offset, "offset")
    if target < lg.log_start_offset or target >= lg.log_end_offset:
        raise NotFound(f"offset {target} is outside {name}-{lg.partition}'s log "
                       f"[{lg.log_start_offset}, {lg.log_end_offset})")
    for pos, view, seg in _batch_positions(lg, target):
        if view.size > MAX_READ_BYTES:
            raise BadRequest(f"the batch at {pos} is {view.size} bytes, larger than the byte view shows")
        buf = seg.log.read(pos, view.size)
        try:
            spans = batch_field_spans(buf)
        except InvalidBatch as e:
            raise BadRequest(f"batch at {pos} is unreadable: {e}") from None
        return {"topic": name, "partition": lg.partition, "segment": seg.base_offset, "position": pos,
                "base_offset": view.base_offset, "magic": view.magic, "size": len(buf),
                "codec": _ATTR_CODECS.get(view.compression, "?"), "hex": buf.hex(),
                "spans": [{"start": a, "end": b, "label": label} for a, b, label in spans]}
    raise NotFound(f"no batch holds offset {target}")


# -- groups ----------------------------------------------------------------------------------------
def groups(services: BrokerServices) -> list[GroupRow]:
    gc = services.group_coordinator
    consumer = gc.consumer_groups.groups
    out: list[GroupRow] = []
    ids = set(gc.groups) | set(gc.offsets) | set(consumer)
    for gid, sg in sorted(services.share_groups.groups.items()):
        # a share group's id is its own (Kafka keeps every group type in one namespace)
        ids.discard(gid)
        out.append({"group_id": gid, "type": "share", "state": sg.state, "protocol_type": "share",
                    "members": len(sg.members), "epoch": sg.group_epoch,
                    "lag": sum(r["lag"] for r in _share_partitions(services, gid) if r["lag"] >= 0),
                    "uncommitted": 0})
    for gid in sorted(ids):
        offsets = _offsets(services, gid)
        lag = sum(r["lag"] for r in offsets if r["lag"] is not None)
        uncommitted = sum(1 for r in offsets if r["committed"] is None)
        cg = consumer.get(gid)
        if cg is not None:
            out.append({"group_id": gid, "type": "consumer", "state": cg.state.value, "protocol_type": "consumer",
                        "members": len(cg.members), "epoch": cg.group_epoch, "lag": lag,
                        "uncommitted": uncommitted})
            continue
        g = gc.groups.get(gid)
        out.append({"group_id": gid, "type": "classic", "state": g.state.value if g else "Empty",
                    "protocol_type": (g.protocol_type if g else None) or "",
                    "members": len(g.members) if g else 0, "epoch": g.generation_id if g else None, "lag": lag,
                    "uncommitted": uncommitted})
    return sorted(out, key=lambda g: g["group_id"])


def _offsets(services: BrokerServices, gid: str) -> list[CommittedOffset]:
    """The group's committed offsets with their lag, then the partitions its members are assigned
    that have no commit yet: Kafka's kafka-consumer-groups --describe lists those too, with `-` for
    the offset and the lag (a lag summed over the commits alone would look lower than it is)."""
    rows: list[CommittedOffset] = []
    committed = services.group_coordinator.offsets.get(gid, {})
    for (tp, om) in sorted(committed.items()):
        end = _high_watermark(services, tp)
        rows.append({"topic": tp[0], "partition": tp[1], "committed": om.offset, "metadata": om.metadata,
                     "commit_timestamp": om.commit_timestamp_ms, "log_end_offset": end,
                     "lag": max(0, end - om.offset) if end is not None and om.offset >= 0 else None})
    for tp in sorted(_assigned(services, gid) - set(committed)):
        rows.append({"topic": tp[0], "partition": tp[1], "committed": None, "metadata": None,
                     "commit_timestamp": None, "log_end_offset": _high_watermark(services, tp), "lag": None})
    return rows


def _high_watermark(services: BrokerServices, tp: tuple[str, int]) -> int | None:
    lg = services.replica_manager.get_partition(tp[0], tp[1])
    return lg.high_watermark if lg is not None else None


def _assigned(services: BrokerServices, gid: str) -> set[tuple[str, int]]:
    """The partitions the group's members hold now (a classic group's assignment bytes or a
    KIP-848 member's assigned partitions)."""
    gc = services.group_coordinator
    out: set[tuple[str, int]] = set()
    cg = gc.consumer_groups.groups.get(gid)
    if cg is not None:
        for m in cg.members.values():
            for tp in _named(services, m.assigned):
                out.update((tp["topic"], p) for p in tp["partitions"])
        return out
    g = gc.groups.get(gid)
    if g is not None and g.protocol_type == "consumer":
        for cm in g.members.values():
            for tp in _assignment(cm.assignment) or ():
                out.update((tp["topic"], p) for p in tp["partitions"])
    return out


def _timeline(services: BrokerServices, gid: str) -> list[TimelineEvent]:
    return [{"at_ms": e.at_ms, "event": e.event, "detail": e.detail, "generation": e.generation}
            for e in services.group_coordinator.events.of(gid)]


def _named(services: BrokerServices, a: dict[uuid.UUID, set[int]]) -> list[TopicPartitions]:
    """A KIP-848 assignment (topic ids) with the topics' names, as ConsumerGroupDescribe names them."""
    out: list[TopicPartitions] = []
    for tid, ps in a.items():
        t = services.metadata_cache.topic_by_id(tid)
        out.append({"topic": t.name if t is not None else str(tid), "partitions": sorted(ps)})
    return sorted(out, key=lambda x: x["topic"])


def _consumer_group(services: BrokerServices, cg: ConsumerGroup) -> ConsumerGroupView:
    members: list[ConsumerMember] = []
    for m in sorted(cg.members.values(), key=lambda m: m.member_id):
        target = cg.target.get(m.member_id, {})
        members.append({
            "member_id": m.member_id, "group_instance_id": m.instance_id, "rack_id": m.rack_id,
            "client_id": m.client_id, "client_host": m.client_host, "member_epoch": m.member_epoch,
            "previous_member_epoch": m.previous_member_epoch, "state": m.state.name,
            "subscribed_topics": sorted(m.subscribed_topic_names), "subscribed_regex": m.subscribed_topic_regex,
            "server_assignor": m.server_assignor, "assignment": _named(services, m.assigned),
            "pending_revocation": _named(services, m.pending_revocation), "target": _named(services, target),
            "converged": m.member_epoch == cg.assignment_epoch and same_assignment(m.assigned, target)})
    return {"group_id": cg.group_id, "type": "consumer", "state": cg.state.value, "protocol_type": "consumer",
            "group_epoch": cg.group_epoch, "assignment_epoch": cg.assignment_epoch, "assignor": cg.assignor_name,
            "members": members, "offsets": _offsets(services, cg.group_id),
            "timeline": _timeline(services, cg.group_id)}


def group(services: BrokerServices, gid: str) -> GroupView:
    gc = services.group_coordinator
    sg = services.share_groups.describe(gid)
    if sg is not None:
        return _share_group(services, sg)
    cg = gc.consumer_groups.groups.get(gid)
    if cg is not None:
        return _consumer_group(services, cg)
    g = gc.groups.get(gid)
    if g is None and gid not in gc.offsets:
        raise NotFound(f"no group {gid!r}")
    members: list[ClassicMember] = []
    if g is not None:
        for m in g.members.values():
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "assignment": _assignment(m.assignment)})
    return {"group_id": gid, "type": "classic", "state": g.state.value if g else "Empty",
            "protocol_type": g.protocol_type if g else None, "protocol": g.protocol_name if g else None,
            "generation": g.generation_id if g else None, "leader": g.leader_id if g else None,
            "state_since": g.current_state_timestamp if g else None,
            "previous_state": g.previous_state.value if g else None,
            "members": members, "offsets": _offsets(services, gid), "timeline": _timeline(services, gid)}


SHOWN_IN_FLIGHT = 200  # in-flight records listed per share partition (the counts cover them all)


def _share_partitions(services: BrokerServices, gid: str) -> list[SharePartitionView]:
    """Each share partition of the group: its window (start/end offset), the in-flight records by
    state with their delivery counts and locks, and the start offset and lag DescribeShareGroupOffsets
    reports (handlers/share_groups.py: lag = high watermark - start offset - records already
    acknowledged or archived inside the window)."""
    coord = services.share_groups
    now = services.clock()
    rows: list[SharePartitionView] = []
    for (g, tid, p), sp in coord.partitions.items():
        if g != gid:
            continue
        t = services.metadata_cache.topic_by_id(tid)
        lg = services.replica_manager.get_partition(t.name, p) if t is not None else None
        counts = dict.fromkeys(("AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED"), 0)
        records: list[InFlightRecord] = []
        deliveries: dict[int, int] = {}
        locks = []
        for off, r in sp.in_flight():
            counts[r.state.name] += 1
            deliveries[r.delivery_count] = deliveries.get(r.delivery_count, 0) + 1
            if r.state.name == "ACQUIRED":
                locks.append(r.lock_deadline_ms)
            if len(records) < SHOWN_IN_FLIGHT:
                records.append({"offset": off, "state": r.state.name, "delivery_count": r.delivery_count,
                                "member_id": r.member_id,
                                "lock_expires_ms": r.lock_deadline_ms if r.state.name == "ACQUIRED" else None})
        done = counts["ACKNOWLEDGED"] + counts["ARCHIVED"]
        hw = lg.high_watermark if lg is not None else None
        rows.append({"topic": t.name if t is not None else str(tid), "topic_id": str(tid), "partition": p,
                     "start_offset": sp.start_offset, "end_offset": sp.end_offset, "state_epoch": sp.state_epoch,
                     "high_watermark": hw, "lag": max(0, hw - sp.start_offset - done) if hw is not None else -1,
                     "in_flight": counts, "delivery_counts": {str(k): v for k, v in sorted(deliveries.items())},
                     "next_lock_expiry_ms": min(locks) if locks else None,
                     "next_lock_expiry_in_ms": min(locks) - now if locks else None,
                     "records": records, "records_shown": len(records), "records_total": sum(counts.values())})
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def _share_group(services: BrokerServices, sg: ShareGroup) -> ShareGroupView:
    members: list[ShareMember] = [
        {"member_id": m.member_id, "member_epoch": m.member_epoch, "client_id": m.client_id,
         "client_host": m.client_host, "rack_id": m.rack_id, "subscribed_topics": sorted(m.subscribed),
         "assignment": _named(services, {tid: set(ps) for tid, ps in m.assignment.items()})}
        for m in sorted(sg.members.values(), key=lambda m: m.member_id)]
    return {"group_id": sg.group_id, "type": "share", "state": sg.state, "protocol_type": "share",
            "group_epoch": sg.group_epoch, "assignment_epoch": sg.assignment_epoch, "members": members,
            "share_partitions": _share_partitions(services, sg.group_id),
            "configs": {k: services.share_groups.group_config(sg.group_id, k) for k in SHARE_GROUP_KEYS}}


def _assignment(raw: bytes) -> list[TopicPartitions] | None:
    """ConsumerProtocolAssignment: version, [topic, [partition]], user data (Kafka's schema)."""
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        out: list[TopicPartitions] = []
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            name = bytes(raw[pos:pos + ln]).decode()
            pos += ln
            (np,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            parts = list(struct.unpack_from(f">{np}i", raw, pos))
            pos += 4 * np
            out.append({"topic": name, "partitions": parts})
        return out
    except (struct.error, UnicodeDecodeError):
        return None


# -- transactions and producers --------------------------------------------------------------------
def transactions(services: BrokerServices) -> TransactionsView:
    tc = services.txn_coordinator
    now = services.clock()
    txns: list[TransactionRow] = []
    for md in sorted(tc.txns.values(), key=lambda m: m.transactional_id):
        txns.append({"transactional_id": md.transactional_id, "producer_id": md.producer_id,
                     "epoch": md.producer_epoch, "state": md.state.display_name, "timeout_ms": md.txn_timeout_ms,
                     "partitions": sorted(f"{t}-{p}" for t, p in md.topic_partitions),
                     "started": md.txn_start_timestamp,
                     "open_ms": now - md.txn_start_timestamp if md.txn_start_timestamp >= 0 else None})
    held: list[HeldPartition] = []
    for lg in services.replica_manager.all_partitions():
        if lg.last_stable_offset < lg.high_watermark:
            held.append({"topic": lg.topic, "partition": lg.partition, "last_stable_offset": lg.last_stable_offset,
                         "high_watermark": lg.high_watermark,
                         "held_back": lg.high_watermark - lg.last_stable_offset})
    producers: list[ProducerRow] = []
    for lg in services.replica_manager.all_partitions():
        for pid, e in sorted(lg.producers().items()):
            producers.append({"topic": lg.topic, "partition": lg.partition, "producer_id": pid,
                              "epoch": e.producer_epoch, "last_sequence": e.last_seq if e.batches else -1,
                              "open_txn_first_offset": e.current_txn_first_offset})
    return {"transactions": txns, "lso_held": held, "producers": producers, "now": int(time.time() * 1000)}
