"""KIP-858 directory assignment on Kafka 4.4's cluster and on ours, read with Kafka's own
`kafka-dump-log --cluster-metadata-decoder` from each controller's metadata log (issue 29).

The same scenario on both: three brokers with two `log.dirs` each register both directory ids
(RegisterBrokerRecord `logDirs`); a topic created with 4 partitions and replication factor 3 gets
PartitionRecords whose `directories` are all DirectoryId.UNASSIGNED (each broker has several
directories: ClusterControlManager.defaultDir); each broker then places its replicas and tells the
controller (AssignReplicasToDirs), so PartitionChangeRecords carry every replica's real directory,
the one holding its log on disk. Then broker 1's second directory fails: the controller takes
broker 1 out of the ISR and leadership of the partitions whose replica is there (and only those)
and writes a BrokerRegistrationChangeRecord with the directory left online."""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from minibroker_storage.checkpoint import uuid_from_kafka
from reference import kafka_reference as kr
from reference.kafka_cluster import KafkaCluster
from tests.cluster.cluster_helpers import MiniCluster, wait_until

TOPIC = "jbod"
UNASSIGNED = uuid.UUID(int=1)  # Kafka: DirectoryId.UNASSIGNED


def payloads(metadata_dir: Path, tmp: Path) -> list[dict]:
    """Every record of the metadata log as kafka-dump-log decodes it (a copy of the segments)."""
    copy = tmp / f"md-{time.monotonic_ns()}"
    shutil.copytree(metadata_dir, copy)
    segments = ",".join(str(p) for p in sorted(copy.glob("*.log")))
    out = kr.run_tool("kafka-dump-log", ["--cluster-metadata-decoder", "--files", segments], timeout=120)
    assert out.returncode == 0, out.stderr
    return [json.loads(m) for m in re.findall(r"payload: (\{.*\})$", out.stdout, re.M)]


def directory_ids(dirs: list[Path]) -> dict[Path, uuid.UUID]:
    out = {}
    for d in dirs:
        props = dict(line.split("=", 1) for line in (d / "meta.properties").read_text().splitlines()
                     if "=" in line and not line.startswith("#"))
        out[d] = uuid_from_kafka(props["directory.id"])
    return out


def placement(broker_dirs: dict[int, list[Path]]) -> dict[tuple[int, int], uuid.UUID]:
    out = {}
    for b, dirs in broker_dirs.items():
        for d, dir_id in directory_ids(dirs).items():
            for part in d.glob(f"{TOPIC}-*"):
                if part.is_dir() and part.name.rsplit("-", 1)[1].isdigit():
                    out[(b, int(part.name.rsplit("-", 1)[1]))] = dir_id
    return out


def scenario(bootstrap: str, records: Callable[[], list[dict]], broker_dirs: dict[int, list[Path]]) -> dict:
    """What both clusters must agree on, from their metadata logs."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 4, 3)])[TOPIC].result(60)

    def state() -> tuple[list[dict], dict[tuple[int, int], uuid.UUID]]:
        """The records, and each (broker, partition)'s directory after them."""
        recs = records()
        topic_id = next(r["data"]["topicId"] for r in recs if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == TOPIC)
        replicas: dict[int, list[int]] = {}
        dirs: dict[int, list[str]] = {}
        for r in recs:
            d = r["data"]
            if r["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and d["topicId"] == topic_id:
                p = d["partitionId"]
                if "replicas" in d and d["replicas"] is not None:
                    replicas[p] = d["replicas"]
                if "directories" in d and d["directories"] is not None:
                    dirs[p] = d["directories"]
        return recs, {(b, p): uuid_from_kafka(di) for p in replicas
                      for b, di in zip(replicas[p], dirs.get(p, []), strict=False)}

    wait_until(lambda: state()[1] == placement(broker_dirs), "every replica's directory is in the metadata log", 60)
    recs, dirs = state()
    registered = {r["data"]["brokerId"]: {uuid_from_kafka(x) for x in r["data"]["logDirs"]}
                  for r in recs if r["type"] == "REGISTER_BROKER_RECORD"}
    topic_id = next(r["data"]["topicId"] for r in recs if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == TOPIC)
    created = [r["data"] for r in recs if r["type"] == "PARTITION_RECORD" and r["data"]["topicId"] == topic_id]
    ids = {b: directory_ids(ds) for b, ds in broker_dirs.items()}  # before one of them fails
    # broker 1's second directory fails (replaced by a file): its next checkpoint fails
    failing = broker_dirs[1][1]
    failed_id = ids[1][failing]
    in_failed = sorted(p for (b, p), d in dirs.items() if b == 1 and d == failed_id)
    failing.rename(failing.parent / "gone")
    failing.write_text("not a directory any more")

    def failed_over() -> dict | None:
        recs = records()
        changes = [r["data"] for r in recs if r["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
                   and r["data"]["brokerId"] == 1 and r["data"].get("logDirs")]
        parts: dict[int, dict] = {}
        for r in recs:
            d = r["data"]
            if r["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and d["topicId"] == topic_id:
                cur = parts.setdefault(d["partitionId"], {})
                for key in ("leader", "isr"):
                    if d.get(key) is not None and d.get(key) != -2:
                        cur[key] = d[key]
        if not changes or any(parts[p]["leader"] == 1 or 1 in parts[p]["isr"] for p in in_failed):
            return None
        return {"online_after": [uuid_from_kafka(x) for x in changes[-1]["logDirs"]],
                "in_failed_led_elsewhere": all(parts[p]["leader"] not in (1, -1) for p in in_failed),
                "others_keep_1": all(1 in parts[p]["isr"] for p in parts if p not in in_failed)}
    after = wait_until(failed_over, "broker 1 leaves the ISR and leadership of its failed directory's replicas", 60)
    return {
        "failed": {"online_after": after["online_after"] == [ids[1][broker_dirs[1][0]]],
                   "in_failed_led_elsewhere": after["in_failed_led_elsewhere"], "others_keep_1": after["others_keep_1"],
                   "partitions_in_failed": len(in_failed)},
        "registered": {b: got == set(ids[b].values()) for b, got in registered.items()},
        "created_directories": sorted({uuid_from_kafka(x) for p in created for x in p["directories"]}, key=str),
        "replicas_per_directory": sorted(sorted(list(dirs.values()).count(i) for i in set(dirs.values()))),
        "none_unassigned": UNASSIGNED not in dirs.values(),
    }


def test_directories_are_assigned_as_kafkas_cluster_assigns_them(tmp_path: Path) -> None:
    k = KafkaCluster(3, overrides={"num.partitions": 1, "log.flush.offset.checkpoint.interval.ms": 100})
    kafka_dirs = {}
    for i, b in k.brokers.items():
        second = b.data_dir.parent / "second"
        b.overrides = {**b.overrides, "log.dirs": f"{b.data_dir},{second}"}
        kafka_dirs[i] = [b.data_dir, second]
    with k:
        theirs = scenario(k.bootstrap, lambda: payloads(k.controller.data_dir / "__cluster_metadata-0", tmp_path),
                          kafka_dirs)
    m = MiniCluster(tmp_path / "mini", overrides={"log.flush.offset.checkpoint.interval.ms": 100})
    mini_dirs = {}
    for i, b in m.brokers.items():
        second = b.data_dir.parent / "second"
        b.overrides["log.dirs"] = f"{b.data_dir},{second}"
        mini_dirs[i] = [b.data_dir, second]
    m.start()
    try:
        ours = scenario(m.bootstrap, lambda: payloads(m.controller.data_dir / "__cluster_metadata-0", tmp_path),
                        mini_dirs)
    finally:
        m.stop()
    assert theirs == {"registered": {1: True, 2: True, 3: True}, "created_directories": [UNASSIGNED],
                      "replicas_per_directory": theirs["replicas_per_directory"], "none_unassigned": True,
                      "failed": {"online_after": True, "in_failed_led_elsewhere": True, "others_keep_1": True,
                                 "partitions_in_failed": theirs["failed"]["partitions_in_failed"]}}
    assert ours == theirs
