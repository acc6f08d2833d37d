"""Share-group scenarios of issue 34, each run the same way against any broker with confluent-kafka's
ShareConsumer (librdkafka): each returns a RESULT line, and the line must be the same on
minibroker and on Apache Kafka (tests/reference/test_share_delivery.py runs both).

- read_committed: two transactional producers interleave 12 committed and 5 aborted transactions
  of 10 records (one of them alternates commit and abort, so one producer id has several aborted
  transactions in one read); a read_committed member gets the 120 committed records, none of the
  50 aborted ones, no control record, each once.
- deleted_topic: records acquired, their topic deleted, then acknowledged (ShareAcknowledge, and
  piggy-backed on ShareFetch, explicit and implicit modes): UNKNOWN_TOPIC_ID for the partition in
  commit_sync's result and in the acknowledgement-commit callback.
- close_receipts: acknowledgements sent by close() get receipts for every offset, whether the
  leave heartbeat or the final ShareAcknowledge reaches the broker first.
- spread: partitions spread over members (SimpleAssignor), shared only when members outnumber them.
- bounds: what one poll (ShareFetch MaxRecords/BatchSize) acquires, log batches whole.
- dlq: the dead-letter queue of KIP-1191 (share.version 2): records rejected, and records released
  until share.delivery.count.limit, written to the group's DLQ topic with Kafka's __dlq.errors.*
  headers, the original key and value when errors.deadletterqueue.copy.record.enable, in DLQ
  partition `source partition % DLQ partitions`; nothing written for a DLQ topic without
  errors.deadletterqueue.group.enable or a name without the broker's `dlq.` prefix.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from tests.reference import share_clients as sc

T = TypeVar("T")


def _at_once(cases: Sequence[T], run: Callable[[T], str]) -> list[str]:
    """`run` of each case, in the cases' order, the cases running at once. Each case has a group
    of its own (and its own topic where it deletes one); one after the other, most of a scenario's
    time was each new member waiting for its first assignment, and the quiet periods."""
    with ThreadPoolExecutor(max_workers=len(cases), thread_name_prefix="share-case") as ex:
        return list(ex.map(run, cases))


def _set_group_configs(boot: str, group: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.incremental_alter_configs([ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])]).values():
        f.result(30)


def read_committed(boot: str, prefix: str) -> str:
    from confluent_kafka import Producer

    topic, group = f"{prefix}-rc", f"{prefix}-g-rc"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest",
                                          "share.isolation.level": "read_committed"}})
    # a alternates commit and abort (5 aborted transactions of one producer id), b always commits
    a = Producer({"bootstrap.servers": boot, "transactional.id": f"{topic}-a", "linger.ms": 0})
    b = Producer({"bootstrap.servers": boot, "transactional.id": f"{topic}-b", "linger.ms": 0})
    for p in (a, b):
        p.init_transactions(30)
    plan_a = [True, False] * 5  # 5 committed, 5 aborted
    plan_b = [True] * 7
    for i in range(max(len(plan_a), len(plan_b))):
        open_ = [(p, name, plan[i]) for p, name, plan in ((a, "a", plan_a), (b, "b", plan_b)) if i < len(plan)]
        for p, _, _ in open_:
            p.begin_transaction()
        for j in range(10):  # the two transactions' batches interleave in the log
            for p, name, commit in open_:
                p.produce(topic, value=f"{'c' if commit else 'x'}-{name}{i}-{j}".encode())
                p.flush(30)
        for p, _, commit in open_:
            (p.commit_transaction if commit else p.abort_transaction)(30)
    sc.produce(boot, topic, ["end"])
    c = sc.consumer(boot, group, topic, 500)
    try:
        got = sc.poll_until(c, lambda g: any(m.value() == b"end" for m in g), sc.accept, timeout=60)
    finally:
        c.close()
    values = Counter(m.value().decode() for m in got)
    return (f"RESULT read_committed received={sum(values.values())} distinct={len(values)} "
            f"committed={sum(1 for v in values if v.startswith('c-'))} "
            f"aborted={sum(1 for v in values if v.startswith('x-'))} "
            f"other={sorted(v for v in values if v[:2] not in ('c-', 'x-'))}")


def _ack_outcomes(c: sc.Consumer, seen: list[str]) -> None:
    """Record what each acknowledgement-commit callback reports: `error` per partition or `ok`."""
    def callback(offsets: dict, exc: object) -> None:  # type: ignore[type-arg]
        for tp, offs in offsets.items():
            err = tp.error.name() if tp.error is not None else (exc.args[0].name() if exc is not None else "ok")
            seen.append(f"{err}:{len(offs)}")
    c.set_acknowledgement_commit_callback(callback)


def deleted_topic(boot: str, prefix: str) -> str:
    """Records acquired, their topic deleted, then acknowledged: by commit_sync (ShareAcknowledge)
    in the explicit mode, and by the next poll (acknowledgements piggy-backed on ShareFetch) in the
    explicit and implicit modes, once after a heartbeat. What the commit callback and commit_sync
    report per partition."""
    from confluent_kafka import ShareConsumer
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": boot})

    def case(how: str) -> str:
        topic, group = f"{prefix}-del-{how}", f"{prefix}-g-del-{how}"
        sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest"}})
        sc.produce(boot, topic, [f"v{i}" for i in range(5)])
        mode = how.split("-")[0]
        c = ShareConsumer({"bootstrap.servers": boot, "group.id": group, "share.acknowledgement.mode": mode,
                           "max.poll.records": 5})
        seen: list[str] = []
        _ack_outcomes(c, seen)
        c.subscribe([topic])
        try:
            got: list[sc.Message] = []
            deadline = time.monotonic() + 30
            while not got and time.monotonic() < deadline:
                got = list(c.poll(0.5))
            assert got, f"nothing received from {topic}"
            admin.delete_topics([topic])[topic].result(30)
            # a heartbeat between (the default interval is 5 s on both) takes the topic out of the assignment
            time.sleep(6 if "heartbeat" in how else 1)
            if mode == "explicit":
                for m in got:
                    c.acknowledge(m)
            result: dict = {}  # type: ignore[type-arg]
            if how.endswith("commit"):
                result = c.commit_sync(30)
            else:
                c.poll(2)
            deadline = time.monotonic() + 10
            while not seen and time.monotonic() < deadline:
                c.poll(0.5)
        finally:
            c.close()
        codes = sorted({(e.args[0].name() if e is not None else "ok") for e in result.values()})
        return f"{how}: got={len(got)} commit={codes} callback={seen}"
    out = _at_once(("explicit-commit", "explicit-poll", "implicit-poll", "implicit-commit",
                    "explicit-heartbeat-commit"), case)
    return "RESULT deleted_topic " + " | ".join(out)


def close_receipts(boot: str, prefix: str) -> str:
    """A consumer acknowledges what it got from three partitions (explicit mode) and closes without
    committing: close sends the acknowledgements (ShareAcknowledge at session epoch -1) as it
    leaves the group (heartbeat at epoch -1), in either order: the commit callback reports each
    record's offset, without error. Four rounds, a group each (the order varies from run to run)."""
    from confluent_kafka import Producer, ShareConsumer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"{prefix}-close"
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for i in range(12):
        p.produce(topic, value=f"v{i}".encode(), partition=i % 3)
        assert p.flush(30) == 0

    def round_of(round_: int) -> str:
        mode = "explicit"
        group = f"{prefix}-g-close-{round_}"
        _set_group_configs(boot, group, {"share.auto.offset.reset": "earliest"})
        c = ShareConsumer({"bootstrap.servers": boot, "group.id": group, "share.acknowledgement.mode": mode,
                           "max.poll.records": 12})
        receipts: list[str] = []

        def callback(offsets: dict, exc: object, receipts: list[str] = receipts) -> None:  # type: ignore[type-arg]
            for tp, offs in offsets.items():
                err = tp.error.name() if tp.error is not None else ("ok" if exc is None else exc.args[0].name())
                receipts.extend(f"{err}:{tp.partition}:{o}" for o in offs)
        c.set_acknowledgement_commit_callback(callback)
        c.subscribe([topic])
        got: list[sc.Message] = []
        deadline = time.monotonic() + 30
        while len(got) < 12 and time.monotonic() < deadline:
            msgs = list(c.poll(0.5))
            if mode == "explicit":
                for m in msgs:
                    c.acknowledge(m)
            got += msgs
        before = len(receipts)
        c.close()
        # how many records one ShareFetch hands out differs (item 4): count the receipts of the
        # polls and of close together
        outcomes = Counter(r.split(":")[0] for r in receipts)
        return (f"{mode}: got={len(got)} receipts={dict(sorted(outcomes.items()))} "
                f"distinct={len(set(receipts))} at_close={len(receipts) > before}")
    return "RESULT close_receipts " + " | ".join(_at_once(range(4), round_of))


def _assignments(boot: str, group: str) -> list[list[int]]:
    """Each member's assigned partitions (ShareGroupDescribe), sorted."""
    from minibroker_protocol.apis import share_group_describe
    from tests.integration.helpers import RawClient

    with RawClient(boot) as raw:
        resp = raw.call(share_group_describe.API, 1, share_group_describe.REQUEST(
            group_ids=[group], include_authorized_operations=False))
    members = resp.groups[0].members if resp.groups else []
    return sorted(sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions) for m in members)


def _settle(boot: str, group: str, consumers: list[sc.Consumer], want: Callable[[list[list[int]]], bool],
            timeout: float = 40.0) -> list[list[int]]:
    """Poll every consumer (nothing to read yet) until the group's assignment is `want`ed: members
    learn a new assignment on their next heartbeat (every 5 s on both brokers)."""
    deadline = time.monotonic() + timeout
    while True:
        for c in consumers:
            assert not c.poll(0.3)
        got = _assignments(boot, group)
        if want(got) or time.monotonic() > deadline:
            return got


def spread(boot: str, prefix: str) -> str:
    """Two members on four partitions: two partitions each, none shared; 400 records produced
    then, polled by the two in turn: 200 each, each from its own two partitions. Then three
    members on two partitions: each partition shared by two of them, one member has both."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": boot})
    out = []
    for n_parts, n_members, n_records in ((4, 2, 400), (2, 3, 60)):
        topic, group = f"{prefix}-spread{n_parts}", f"{prefix}-g-spread{n_parts}"
        admin.create_topics([NewTopic(topic, n_parts, 1)])[topic].result(30)
        _set_group_configs(boot, group, {"share.auto.offset.reset": "earliest"})
        consumers = [sc.consumer(boot, group, topic, 50) for _ in range(n_members)]
        try:
            shared = n_members > n_parts
            sizes = [1] * (n_members - 1) + [2] if shared else [n_parts // n_members] * n_members
            assignment = _settle(boot, group, consumers, lambda a, sizes=sizes: sorted(map(len, a)) == sizes)
            p = Producer({"bootstrap.servers": boot, "linger.ms": 5})
            for i in range(n_records):
                p.produce(topic, value=f"v{i}".encode(), partition=i % n_parts)
            assert p.flush(30) == 0
            got: list[list[sc.Message]] = [[] for _ in consumers]
            deadline = time.monotonic() + 60
            while sum(map(len, got)) < n_records and time.monotonic() < deadline:
                for i, c in enumerate(consumers):
                    got[i] += sc.poll(c, sc.accept, 0.3)
        finally:
            for c in consumers:
                c.close()
        keys = Counter((m.partition(), m.offset()) for g in got for m in g)
        owners = Counter(p for a in assignment for p in a)
        line = (f"partitions={n_parts} members={n_members} sizes={sorted(map(len, assignment))} "
                f"members_per_partition={sorted(owners.values())} received={len(keys)} "
                f"duplicates={sum(n - 1 for n in keys.values())} "
                f"each_from_own={all({m.partition() for m in g} <= set(a) for g, a in zip(got, _by_partition(got, assignment), strict=True))}")
        if not shared:
            line += f" per_member={sorted(map(len, got))}"
        out.append(line)
    return "RESULT spread " + " | ".join(out)


def _by_partition(got: list[list[sc.Message]], assignment: list[list[int]]) -> list[list[int]]:
    """The assignment of the member behind each consumer: the one holding the partitions its
    records came from (ShareGroupDescribe does not say which consumer is which)."""
    out = []
    for g in got:
        seen = {m.partition() for m in g}
        match = [a for a in assignment if seen <= set(a)]
        out.append(match[0] if match else [])
    return out


def bounds(boot: str, prefix: str) -> str:
    """max.poll.records 30 (ShareFetch MaxRecords and BatchSize 30) on one partition holding a
    batch of 50 records and then 50 batches of one: what each poll returns. In the default
    acquire mode (batch_optimized) a log batch is acquired whole, the limit checked between
    batches."""
    from confluent_kafka import Producer

    topic, group = f"{prefix}-bounds", f"{prefix}-g-bounds"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest"}})
    big = Producer({"bootstrap.servers": boot, "linger.ms": 2000, "batch.num.messages": 1000})
    for i in range(50):
        big.produce(topic, value=f"b{i}".encode())
    assert big.flush(30) == 0
    sc.produce(boot, topic, [f"s{i}" for i in range(50)])
    c = sc.consumer(boot, group, topic, 30)
    polls: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while sum(polls) < 100 and time.monotonic() < deadline:
            got = sc.poll(c, sc.accept)
            if got:
                polls.append(len(got))
    finally:
        c.close()
    return f"RESULT bounds polls={polls}"


DLQ_GROUPS = ("copy", "nocopy", "off", "unprefixed")


def dlq_setup(boot: str, prefix: str) -> tuple[str, dict[str, str]]:
    """A source topic of 3 partitions holding 4 keyed records each (one batch per record), the
    DLQ topics, and one group per case (earliest, delivery count limit 2): the source topic and
    group id of each case."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, dlq_topic = f"{prefix}-dlqsrc", f"dlq.{prefix}"
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic(topic, 3, 1),
                                  NewTopic(dlq_topic, 2, 1, config={"errors.deadletterqueue.group.enable": "true"}),
                                  NewTopic(f"{dlq_topic}-off", 1, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for part in range(3):
        for i in range(4):
            p.produce(topic, key=f"k{part}-{i}".encode(), value=f"v{part}-{i}".encode(), partition=part,
                      headers=[("original", b"kept?")])
            assert p.flush(30) == 0
    names = {"copy": dlq_topic, "nocopy": dlq_topic, "off": f"{dlq_topic}-off", "unprefixed": f"nodlq.{prefix}"}
    groups = {}
    for case in DLQ_GROUPS:
        group = groups[case] = f"{prefix}-g-dlq-{case}"
        _set_group_configs(boot, group, {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2",
                                         "errors.deadletterqueue.topic.name": names[case],
                                         "errors.deadletterqueue.copy.record.enable": str(case == "copy").lower()})
    return topic, groups


def dlq_plan(offset: int) -> str:
    """Offset 0 of each partition is rejected, offset 1 released at every delivery, the rest accepted."""
    return {0: "reject", 1: "release"}.get(offset, "accept")


def dlq_contents(boot: str, prefix: str, want: int) -> list[str]:
    """The records of the DLQ topics (`dlq.<prefix>`, `dlq.<prefix>-off`), sorted: partition,
    timestamp type, key, value and headers (timestamps differ)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": boot, "group.id": f"{prefix}-dlq-reader", "enable.auto.commit": False})
    c.assign([TopicPartition(f"dlq.{prefix}", 0, 0), TopicPartition(f"dlq.{prefix}", 1, 0),
              TopicPartition(f"dlq.{prefix}-off", 0, 0)])
    got: list[str] = []
    try:
        deadline = time.monotonic() + 30
        quiet_until = None
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                headers = [(k, v.decode() if v is not None else None) for k, v in (m.headers() or [])]
                got.append(f"{m.topic()}[{m.partition()}] ts_type={m.timestamp()[0]} key={m.key()!r} "
                           f"value={m.value()!r} headers={headers}")
            if len(got) >= want:  # then a little longer: nothing more may come
                quiet_until = quiet_until or time.monotonic() + 3
                if time.monotonic() > quiet_until:
                    break
    finally:
        c.close()
    return sorted(got)


def dlq(boot: str, prefix: str) -> str:
    """The confluent ShareConsumer of each case rejects offset 0, releases offset 1 until the
    limit and accepts the rest; then what the DLQ topics hold and what each member saw."""
    topic, groups = dlq_setup(boot, prefix)

    def member(case: str) -> str:
        c = sc.consumer(boot, groups[case], topic, 50)
        deliveries: Counter[tuple[int, int]] = Counter()
        try:
            def ack(m: sc.Message, deliveries: Counter[tuple[int, int]] = deliveries) -> int:
                deliveries[(m.partition(), m.offset())] += 1
                return sc.ack_type(dlq_plan(m.offset()))
            deadline = time.monotonic() + 60
            while sum(deliveries.values()) < 15 and time.monotonic() < deadline:  # 3 x (4 + 1 redelivery)
                sc.poll(c, ack)
            extra = time.monotonic() + 3
            while time.monotonic() < extra:  # nothing comes back
                sc.poll(c, ack)
        finally:
            c.close()
        return f"{case}: deliveries={sorted(deliveries.items())}"
    seen = _at_once(DLQ_GROUPS, member)
    contents = dlq_contents(boot, prefix, 12)
    return ("RESULT dlq " + " | ".join(seen) + " || " + " | ".join(contents)).replace(prefix, "P")


def dlq_expected_contents() -> list[str]:
    """What the DLQ topics hold after the dlq scenario (seen on Kafka 4.4), as `dlq_contents` lists
    it with the prefix as P: offsets 0 (rejected, count 1) and 1 (count 2) of each source
    partition for the two groups whose DLQ topic is usable, partition p in DLQ partition p % 2."""
    reasons = {0: (1, "Offset rejected by client."), 1: (2, "Offset delivery count exceeded the threshold.")}
    contents = []
    for case in ("copy", "nocopy"):
        for part in range(3):
            for off, (count, why) in reasons.items():
                kv = (f"key={f'k{part}-{off}'.encode()!r} value={f'v{part}-{off}'.encode()!r}" if case == "copy"
                      else "key=None value=None")
                headers = [("__dlq.errors.topic", "P-dlqsrc"), ("__dlq.errors.partition", str(part)),
                           ("__dlq.errors.offset", str(off)), ("__dlq.errors.group", f"P-g-dlq-{case}"),
                           ("__dlq.errors.delivery.count", str(count)), ("__dlq.errors.message", why)]
                contents.append(f"dlq.P[{part % 2}] ts_type=1 {kv} headers={headers}")
    return sorted(contents)


def _broker_default(boot: str, key: str, value: str | None) -> None:
    """Set (or delete, with None) a cluster-wide dynamic broker config (IncrementalAlterConfigs on
    the BROKER resource "", which confluent-kafka's admin client does not address)."""
    from minibroker_protocol.apis import incremental_alter_configs
    from tests.integration.helpers import RawClient

    R = incremental_alter_configs.REQUEST
    with RawClient(boot) as raw:
        resp = raw.call(incremental_alter_configs.API, 1, R(resources=[R.AlterConfigsResource(
            resource_type=4, resource_name="", configs=[R.AlterableConfig(
                name=key, config_operation=0 if value is not None else 1, value=value)])], validate_only=False))
    assert [r.error_code for r in resp.responses] == [0], resp


def dlq_auto_create(boot: str, prefix: str) -> str:
    """errors.deadletterqueue.auto.create.topics.enable=true (set cluster-wide for the scenario):
    a group naming a DLQ topic that does not exist rejects 3 records; the broker creates the topic
    and writes them. Its partition count, configs set on it, and contents."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    topic, group, dlq_topic = f"{prefix}-auto-src", f"{prefix}-g-auto", f"dlq.{prefix}-auto"
    sc.create_topic(boot, topic, {group: {"share.auto.offset.reset": "earliest",
                                          "errors.deadletterqueue.topic.name": dlq_topic}})
    sc.produce(boot, topic, ["a", "b", "c"])
    _broker_default(boot, "errors.deadletterqueue.auto.create.topics.enable", "true")
    try:
        c = sc.consumer(boot, group, topic, 10)
        try:
            sc.poll_until(c, lambda g: len(g) >= 3, lambda _m: sc.ack_type("reject"))
        finally:
            c.close()
        admin = AdminClient({"bootstrap.servers": boot})
        deadline = time.monotonic() + 30
        while dlq_topic not in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        _broker_default(boot, "errors.deadletterqueue.auto.create.topics.enable", None)
    meta = admin.list_topics(dlq_topic, timeout=10).topics[dlq_topic]
    configs = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, dlq_topic)])
    set_here = sorted(f"{e.name}={e.value}" for e in next(iter(configs.values())).result(30).values()
                      if e.source == 1)  # DYNAMIC_TOPIC_CONFIG
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": boot, "group.id": f"{prefix}-auto-reader", "enable.auto.commit": False})
    reader.assign([TopicPartition(dlq_topic, p, 0) for p in meta.partitions])
    offsets = []
    try:
        deadline = time.monotonic() + 30
        while len(offsets) < 3 and time.monotonic() < deadline:
            m = reader.poll(0.5)
            if m is not None and m.error() is None:
                offsets.append(dict(m.headers() or [])["__dlq.errors.offset"].decode())
    finally:
        reader.close()
    return (f"RESULT dlq_auto_create partitions={len(meta.partitions)} configs={set_here} "
            f"offsets={sorted(offsets)}")


def _dlq_expected() -> str:
    """What `dlq` prints on both brokers (seen on Kafka 4.4): every member saw offset 1 twice and
    the rest once, then the DLQ topics' records."""
    deliveries = [((p, o), 2 if o == 1 else 1) for p in range(3) for o in range(4)]
    seen = [f"{case}: deliveries={deliveries}" for case in DLQ_GROUPS]
    return "RESULT dlq " + " | ".join(seen) + " || " + " | ".join(dlq_expected_contents())

_HOWS = ["explicit-commit", "explicit-poll", "implicit-poll", "implicit-commit", "explicit-heartbeat-commit"]
# what each scenario prints, on Apache Kafka 4.4 and on minibroker
EXPECTED = {
    "read_committed": "RESULT read_committed received=121 distinct=121 committed=120 aborted=0 other=['end']",
    "deleted_topic": "RESULT deleted_topic " + " | ".join(
        f"{how}: got=5 commit={['UNKNOWN_TOPIC_ID'] if how.endswith('commit') else []} "
        "callback=['UNKNOWN_TOPIC_ID:5']" for how in _HOWS),
    "close_receipts": "RESULT close_receipts " + " | ".join(
        ["explicit: got=12 receipts={'ok': 12} distinct=12 at_close=True"] * 4),
    "spread": ("RESULT spread partitions=4 members=2 sizes=[2, 2] members_per_partition=[1, 1, 1, 1] received=400 "
               "duplicates=0 each_from_own=True per_member=[200, 200] | partitions=2 members=3 sizes=[1, 1, 2] "
               "members_per_partition=[2, 2] received=60 duplicates=0 each_from_own=True"),
    "bounds": "RESULT bounds polls=[50, 30, 20]",
    "dlq": _dlq_expected(),
    "dlq_auto_create": "RESULT dlq_auto_create partitions=1 configs=['errors.deadletterqueue.group.enable=true', "
                       "'message.timestamp.type=CreateTime'] offsets=['0', '1', '2']",
}
