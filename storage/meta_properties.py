"""A data directory's identity: `meta.properties` (Kafka: MetaProperties, MetaPropertiesEnsemble).

Theory of operation. A KRaft node's log directory holds `meta.properties`, a Java properties file:
`version=1`, `cluster.id` (the cluster's id, a Kafka Uuid in base64), `node.id` (the node's
`node.id`) and `directory.id` (this directory's own Uuid, KIP-858). Kafka's `kafka-storage
format` writes it; the node reads it at every start and refuses a directory whose `node.id` is
not its own, or whose `cluster.id` is not the cluster's, with the one-line messages of
`MetaPropertiesEnsemble.verify`. The file is written once (an old one without `directory.id` is
completed, as Kafka's `MetaPropertiesEnsemble.Copier` does), so the cluster id survives restarts.

One difference, on purpose: Kafka refuses to start on a directory nobody formatted; minibroker
formats it on the first start (a dev broker starts with no set-up step), with the configured
`cluster.id` or a new random one. A directory formatted by Kafka's StorageTool is read as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from minibroker_storage.checkpoint import (
    META_PROPERTIES_FILE,
    random_kafka_uuid,
    read_properties,
    uuid_to_kafka,
    write_properties,
)

META_PROPERTIES_VERSION = 1  # Kafka: MetaPropertiesVersion.V1, the KRaft one


class MetaPropertiesError(RuntimeError):
    """A meta.properties a node must not start on; the message is Kafka's."""


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The content of one meta.properties (version 1)."""

    cluster_id: str
    node_id: int
    directory_id: str
    version: int = META_PROPERTIES_VERSION

    @classmethod
    def read(cls, path: Path) -> MetaProperties:
        """Parse `path`; a missing `directory.id` reads as "" (the caller completes it)."""
        props = read_properties(path)
        version = props.get("version", "0")
        if version != str(META_PROPERTIES_VERSION):
            # version 0 (or none) is what ZooKeeper-mode brokers wrote; Kafka 4 is KRaft only
            raise MetaPropertiesError(f"{path}: meta.properties version {version} is not supported; a KRaft "
                                      "data directory has version 1 (kafka-storage format writes it)")
        cluster_id = props.get("cluster.id")
        if not cluster_id:
            raise MetaPropertiesError(f"cluster.id was not specified in the v1 file: {path}")
        node_id = props.get("node.id")
        if node_id is None or not node_id.lstrip("-").isdigit():
            raise MetaPropertiesError(f"node.id was not specified in {path}")
        return cls(cluster_id, int(node_id), props.get("directory.id", ""))

    def write(self, path: Path) -> None:
        write_properties(path, {"version": str(self.version), "cluster.id": self.cluster_id,
                                "node.id": str(self.node_id), "directory.id": self.directory_id})

    def verify(self, path: Path, *, node_id: int | None, cluster_id: str | None) -> None:
        """Kafka's MetaPropertiesEnsemble.verify: the stored ids must be the expected ones."""
        if cluster_id is not None and cluster_id != self.cluster_id:
            raise MetaPropertiesError(f"Invalid cluster.id in: {path}. Expected {cluster_id}, but read "
                                      f"{self.cluster_id}")
        if node_id is not None and node_id != self.node_id:
            raise MetaPropertiesError(
                f"Stored node id {self.node_id} doesn't match previous node id {node_id} in {path}. If you moved "
                "your data, make sure your configured node id matches. If you intend to create a new node, you "
                "should remove all data in your data directories.")


def ensure_meta_properties(log_dir: Path, *, node_id: int | None, cluster_id: str | None) -> MetaProperties:
    """Read and verify `log_dir`'s meta.properties, or format the directory (write one) if it has none.

    `node_id`/`cluster_id` are the configured ones (None: whatever is stored; when formatting,
    node 1 and a random cluster id)."""
    path = Path(log_dir) / META_PROPERTIES_FILE
    if path.exists():
        meta = MetaProperties.read(path)
        meta.verify(path, node_id=node_id, cluster_id=cluster_id)
        if not meta.directory_id:
            meta = MetaProperties(meta.cluster_id, meta.node_id, uuid_to_kafka(random_kafka_uuid()))
            meta.write(path)
        return meta
    Path(log_dir).mkdir(parents=True, exist_ok=True)
    meta = MetaProperties(cluster_id or uuid_to_kafka(random_kafka_uuid()), 1 if node_id is None else node_id,
                          uuid_to_kafka(random_kafka_uuid()))
    meta.write(path)
    return meta
