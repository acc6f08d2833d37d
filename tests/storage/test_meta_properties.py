"""meta.properties: a data dir's identity read, verified and written as Kafka's MetaPropertiesEnsemble does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from minibroker_storage.checkpoint import read_properties
from minibroker_storage.config import LogConfig
from minibroker_storage.log_manager import LogManager
from minibroker_storage.meta_properties import MetaProperties, MetaPropertiesError, ensure_meta_properties

GOLDEN = Path(__file__).resolve().parent.parent / "protocol" / "kraft_golden"
KAFKA_CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def kafka_formatted(tmp_path: Path) -> Path:
    """A data dir as Kafka 4.4's StorageTool left it: meta.properties and the bootstrap snapshot."""
    data = tmp_path / "data"
    (data / "__cluster_metadata-0").mkdir(parents=True)
    shutil.copy(GOLDEN / "meta.properties", data / "meta.properties")
    shutil.copy(GOLDEN / "00000000000000000000-0000000000.checkpoint", data / "__cluster_metadata-0")
    return data


def test_a_first_start_formats_the_dir_once(tmp_path: Path) -> None:
    meta = ensure_meta_properties(tmp_path / "d", node_id=3, cluster_id=None)
    props = read_properties(tmp_path / "d" / "meta.properties")
    assert props == {"version": "1", "cluster.id": meta.cluster_id, "node.id": "3", "directory.id": meta.directory_id}
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", meta.cluster_id) and re.fullmatch(r"[A-Za-z0-9_-]{22}", meta.directory_id)
    before = (tmp_path / "d" / "meta.properties").read_bytes()
    assert ensure_meta_properties(tmp_path / "d", node_id=3, cluster_id=None) == meta
    assert ensure_meta_properties(tmp_path / "d", node_id=None, cluster_id=meta.cluster_id) == meta
    assert (tmp_path / "d" / "meta.properties").read_bytes() == before  # read, never rewritten


def test_a_dir_kafka_formatted_is_read_as_it_is(tmp_path: Path) -> None:
    data = kafka_formatted(tmp_path)
    meta = ensure_meta_properties(data, node_id=1, cluster_id=None)
    assert meta == MetaProperties(KAFKA_CLUSTER_ID, 1, "KgtJVVzE5pjGM9ItT9mjjg")
    lm = LogManager(data, LogConfig(), node_id=1)
    lm.startup()
    try:
        # the metadata log is raft's, not a partition (Kafka's LogManager skips it too)
        assert lm.cluster_id == KAFKA_CLUSTER_ID and lm.logs() == {}
    finally:
        lm.shutdown()
    assert (data / "meta.properties").read_bytes() == (GOLDEN / "meta.properties").read_bytes()


def test_another_node_id_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    data = kafka_formatted(tmp_path)
    path = data / "meta.properties"
    with pytest.raises(MetaPropertiesError) as e:
        ensure_meta_properties(data, node_id=2, cluster_id=None)
    assert str(e.value) == (
        f"Stored node id 1 doesn't match previous node id 2 in {path}. If you moved your data, make sure your "
        "configured node id matches. If you intend to create a new node, you should remove all data in your data "
        "directories.")


def test_another_cluster_id_is_refused_with_kafkas_message(tmp_path: Path) -> None:
    data = kafka_formatted(tmp_path)
    with pytest.raises(MetaPropertiesError) as e:
        ensure_meta_properties(data, node_id=1, cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
    assert str(e.value) == (f"Invalid cluster.id in: {data / 'meta.properties'}. Expected AAAAAAAAAAAAAAAAAAAAAA, "
                            f"but read {KAFKA_CLUSTER_ID}")


def test_a_file_without_directory_id_is_completed(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#\nversion=1\ncluster.id=abc\nnode.id=4\n")
    meta = ensure_meta_properties(tmp_path, node_id=4, cluster_id=None)
    assert (meta.cluster_id, meta.node_id) == ("abc", 4) and meta.directory_id
    assert read_properties(tmp_path / "meta.properties")["directory.id"] == meta.directory_id


@pytest.mark.parametrize("text, message", [
    ("broker.id=1\ncluster.id=abc\n", "version 0 is not supported"),  # a ZooKeeper broker's (v0)
    ("version=1\nnode.id=1\n", "cluster.id was not specified in the v1 file"),
    ("version=1\ncluster.id=abc\n", "node.id was not specified in"),
])
def test_files_a_kraft_node_cannot_use_are_refused(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError, match=message):
        ensure_meta_properties(tmp_path, node_id=1, cluster_id=None)
