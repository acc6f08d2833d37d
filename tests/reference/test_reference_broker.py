"""The reference broker itself: it starts, answers, and Kafka's tools reach both brokers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reference import kafka_reference as kr
from tests.reference.helpers import BOOT, Pair


def test_tool_names_map_to_classes() -> None:
    assert kr.tool_class("kafka-topics") == "org.apache.kafka.tools.TopicCommand"
    assert kr.tool_class("kafka-topics.sh") == "org.apache.kafka.tools.TopicCommand"
    assert kr.tool_class("topics") == "org.apache.kafka.tools.TopicCommand"
    assert kr.tool_class("ConsumerGroupCommand") == "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    assert kr.tool_class("kafka.tools.StorageTool") == "kafka.tools.StorageTool"
    with pytest.raises(KeyError):
        kr.tool_class("kafka-no-such-tool")


def test_an_unknown_tool_name_is_one_line_not_a_traceback() -> None:
    tool = Path(kr.__file__).parent / "kafka-tool"
    r = subprocess.run([sys.executable, str(tool), "kafka-metadata-shel"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("kafka-tool: unknown Kafka tool 'kafka-metadata-shel'; known: connect-mirror-maker, ")
    assert r.stderr.count("\n") == 1


def test_every_mapped_class_is_in_the_jars(kafka_reference: kr.KafkaReference) -> None:
    import zipfile

    classes: set[str] = set()
    for jar in kr.libs_dir().glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            classes.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    missing = {name: cls for name, cls in kr.TOOLS.items() if cls not in classes}
    assert not missing


def test_reference_answers_and_tools_reach_both(kafka_reference: kr.KafkaReference, pair: Pair) -> None:
    assert kr.api_versions_answered("127.0.0.1", kafka_reference.port)
    assert kafka_reference.pid is not None
    ours, theirs = pair.run("kafka-broker-api-versions", ["--bootstrap-server", BOOT])
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    # one broker each, id 1, at the address it was reached on
    assert "(id: 1 rack: null" in ours.stdout and "(id: 1 rack: null" in theirs.stdout

