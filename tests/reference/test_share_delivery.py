"""Issue 34: share groups served as Kafka 4.4 serves them, driven by confluent-kafka's
ShareConsumer (librdkafka) against minibroker and Apache Kafka at once. Each scenario of
tests/reference/share_delivery.py prints one RESULT line; both brokers must give the expected one.
The Java KafkaShareConsumer runs the same kinds of scenario (tools/java/ShareDeliveryCheck.java).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.helpers import ROOT
from tests.reference import share_delivery as sd
from tests.reference.helpers import POOL, Pair

pytest.importorskip("confluent_kafka", minversion="2.16")


def _both(pair: Pair, scenario: Callable[[str, str], str], prefix: str) -> dict[str, str]:
    futures = {side.name: POOL.submit(scenario, side.bootstrap, prefix) for side in (pair.kafka, pair.mini)}
    return {name: f.result(timeout=300) for name, f in futures.items()}


def test_read_committed_member_never_gets_aborted_records(pair: Pair) -> None:
    """120 committed and 50 aborted records, one producer aborting every other transaction."""
    want = sd.EXPECTED["read_committed"]
    assert _both(pair, sd.read_committed, "sd1") == {"kafka": want, "minibroker": want}


def test_acknowledging_records_of_a_deleted_topic_is_unknown_topic_id(pair: Pair) -> None:
    want = sd.EXPECTED["deleted_topic"]
    assert _both(pair, sd.deleted_topic, "sd2") == {"kafka": want, "minibroker": want}


def test_acknowledgements_sent_by_close_get_receipts(pair: Pair) -> None:
    """Before the fix minibroker released a leaving member's records at its leave heartbeat, and the
    close's ShareAcknowledge that came after it failed with INVALID_RECORD_STATE."""
    want = sd.EXPECTED["close_receipts"]
    assert _both(pair, sd.close_receipts, "sd3") == {"kafka": want, "minibroker": want}


def test_partitions_spread_over_members_as_the_simple_assignor(pair: Pair) -> None:
    want = sd.EXPECTED["spread"]
    assert _both(pair, sd.spread, "sd4") == {"kafka": want, "minibroker": want}


def test_one_acquisition_bounded_as_kafka(pair: Pair) -> None:
    """max.poll.records 30: a 50-record log batch comes whole (batch_optimized), then 30, then 20."""
    want = sd.EXPECTED["bounds"]
    assert _both(pair, sd.bounds, "sd5") == {"kafka": want, "minibroker": want}


def test_dead_letter_queue_as_kafka(pair: Pair) -> None:
    """KIP-1191: rejected records and records released until the delivery-count limit, in the DLQ
    topic record for record as Kafka writes them (headers, key and value, partition)."""
    want = sd.EXPECTED["dlq"]
    assert _both(pair, sd.dlq, "sd6") == {"kafka": want, "minibroker": want}


def test_dead_letter_queue_topic_auto_created_as_kafka(pair: Pair) -> None:
    """errors.deadletterqueue.auto.create.topics.enable: the DLQ topic made as Kafka makes it."""
    want = sd.EXPECTED["dlq_auto_create"]
    assert _both(pair, sd.dlq_auto_create, "sd7") == {"kafka": want, "minibroker": want}


# KIP-1222 with the Java client: RENEW then ACCEPT of 5 records (the client refuses a second
# acknowledgement of a record), in a group allowing RENEW and one not (INVALID_RECORD_STATE)
RENEW_EXPECTED = "RESULT renew enable=true got=5 renew=[ok] accept=IllegalStateException redelivered=5 | " \
    "enable=false got=5 renew=[InvalidRecordStateException] accept=IllegalStateException redelivered=0"
DLQ_CONTENTS = sd.dlq_expected_contents()
JAVA_EXPECTED = [
    "RESULT read_committed received=121 committed=120 aborted=0",
    "RESULT deleted_topic got=5 commit=[UnknownTopicIdException]",
    "RESULT close_receipts " + " | ".join(["got=12 receipts={ok=12} distinct=12 at_close=true"] * 3),
    "RESULT bounds polls=[50, 30, 20]",
    "RESULT dlq " + " | ".join(
        f"{case}: deliveries={{" + ", ".join(f"{p}:{o}={2 if o == 1 else 1}" for p in range(3) for o in range(4)) + "}"
        for case in sd.DLQ_GROUPS),
    RENEW_EXPECTED,
]


def _java(classes: Path, boot: str, prefix: str) -> list[str]:
    """ShareDeliveryCheck's RESULT lines, then the DLQ topics its dlq scenario filled."""
    cmd = kr.java_command("ShareDeliveryCheck", [boot, prefix], heap="256m")
    cp = cmd.index("-cp") + 1
    cmd[cp] = f"{classes}:{cmd[cp]}"
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert "DONE" in r.stdout, f"ShareDeliveryCheck against {boot} failed:\n{r.stdout}\n{r.stderr[-3000:]}"
    results = [line for line in r.stdout.splitlines() if line.startswith("RESULT ")]
    return results + [line.replace(f"{prefix}dlq", "P") for line in sd.dlq_contents(boot, f"{prefix}dlq", 12)]


def test_java_share_consumer_same_outcomes(pair: Pair, tmp_path: Path) -> None:
    if shutil.which("javac") is None:
        pytest.skip("REFERENCE BROKER UNAVAILABLE: javac is not installed")
    subprocess.run(["javac", "-d", str(tmp_path), "-cp", str(kr.libs_dir() / "*"),
                    str(ROOT / "tools/java/ShareDeliveryCheck.java")], check=True, capture_output=True, timeout=120)
    futures = {side.name: POOL.submit(_java, tmp_path, side.bootstrap, "sdj-") for side in (pair.kafka, pair.mini)}
    assert {name: f.result(timeout=360) for name, f in futures.items()} == {
        "kafka": JAVA_EXPECTED + DLQ_CONTENTS, "minibroker": JAVA_EXPECTED + DLQ_CONTENTS}
