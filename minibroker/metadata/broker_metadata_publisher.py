"""A KRaft broker's topics and partitions from the metadata log (Kafka: BrokerMetadataPublisher).

Theory of operation. `serve_kraft` adds one `BrokerMetadataPublisher` to the node's MetadataLoader;
each new image (`on_metadata_update(delta, image)`) is applied to the broker, in Kafka's order:

  1. the brokers: every registration becomes a `ClusterBroker` in the MetadataCache (Metadata,
     DescribeCluster and FindCoordinator answer from it) and a `BrokerEndpoint` for the
     ReplicaManager (the inter-broker listener's endpoint, the broker epoch, fenced, in controlled
     shutdown: what the followers fetch from and what the ISR rules read);
  2. the topics created or changed (a partition record, a topic ConfigRecord, every topic on the
     first image or a snapshot): the MetadataCache gets the whole topic (the controller's topic id,
     every partition's leader, leader epoch, replicas, ISR, ELR, partition epoch, the effective
     config: the image's topic configs over the broker defaults); the TopicRegistry gets the
     topic with the logs of the partitions whose replicas include this node, created here when
     missing (Kafka: Partition.createLogIfNotExists); a topic on disk whose id the image does not
     have (deleted and created again while this broker was down) is deleted first;
  3. `ReplicaManager.apply_delta`: leaders and followers, the fetchers;
  0. the dynamic broker configs (cluster default and this broker's): a change republishes every
     topic, whose effective configs lie over them;
  4. the topics deleted (and, on the first image, the topics on disk the image does not have:
     Kafka's stray logs): their partitions stopped, then deleted as the registry deletes them;
     and the partitions a reassignment moved away from this broker: stopped in 3, their logs
     deleted here (Kafka: stopPartitions with deleteLocalLog).

The TopicRegistry keeps its other readers (coordinators, the configs handler, the log cleaner) but
publishes nothing in KRaft mode (minibroker.server adds no publisher to it): this publisher is
the one writer of the MetadataCache and the ReplicaManager's partitions.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from minibroker.config import (
    BrokerConfig,
    ConfigValue,
    effective_topic_config,
    to_log_config,
    validate_topic_config,
)
from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker.metadata.assignments_manager import AssignmentsManager
from minibroker.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataDelta, MetadataImage
from minibroker.metadata.image import TopicImage as MetaTopic
from minibroker.metadata.partition_registration import (
    PartitionRegistration,
    directory_assignment_supported,
    directory_of,
)
from minibroker.metadata_cache import ClusterBroker, MetadataCache, PartitionImage, TopicImage
from minibroker.replica import BrokerEndpoint
from minibroker.replica_manager import ReplicaManager
from minibroker.topics import INTERNAL_TOPICS, Topic, TopicRegistry
from minibroker_storage.checkpoint import uuid_from_kafka
from minibroker_storage.log import Log
from minibroker_storage.log_dir import LogDir
from minibroker_storage.log_manager import LogManager

log = logging.getLogger("minibroker.metadata")


class BrokerMetadataPublisher:
    def __init__(self, node_id: int, *, config: Callable[[], BrokerConfig], topics: TopicRegistry,
                 metadata_cache: MetadataCache, replica_manager: ReplicaManager, log_manager: LogManager,
                 inter_broker_listener: str, caught_up: Callable[[], bool] = lambda: True,
                 dynamic_config: DynamicBrokerConfig | None = None,
                 assignments: AssignmentsManager | None = None):
        self.node_id = node_id
        self.config = config  # the broker config in force (static under dynamic)
        self.topics = topics
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self.log_manager = log_manager
        self.inter_broker_listener = inter_broker_listener
        self.dynamic_config = dynamic_config  # broker configs of the image (cluster default, this broker's)
        self.first = True
        # whether the stray topics were looked for: once, on the first image that reached the
        # controller's high watermark (an image half way through the log lacks later topics)
        self.caught_up = caught_up
        self.strays_checked = False
        self.image = MetadataImage()  # the last image published
        self.assignments = assignments  # KIP-858: where this broker placed its replicas, to the controller
        self._features: dict[str, int] = {}
        self._moved_away: set[tuple[str, int]] = set()  # partitions no longer placed here, to delete

    def on_metadata_update(self, delta: MetadataDelta, image: MetadataImage) -> None:
        whole = self.first or delta.image.offset < 0  # the first image, or a snapshot: every topic
        self._features = dict(image.features)
        self._publish_brokers(image)
        broker_configs_changed = self._publish_broker_configs(delta, image, whole)
        # KIP-73's throttles: this broker's rates, the topics' throttled replicas (minibroker.quotas.replication_quota)
        self.replica_manager.replication_quotas.update(
            image.configs.get((BROKER_RESOURCE, str(self.node_id)), {}),
            {name: cfg for (kind, name), cfg in image.configs.items() if kind == TOPIC_RESOURCE})
        whole = whole or broker_configs_changed  # the defaults under every topic's config moved
        changed_ids = set(image.topics) if whole else set(delta.changed_partitions)
        if not whole:
            configs_changed = {name for (rtype, name), kv in delta.configs.items()
                               if rtype == TOPIC_RESOURCE and kv != delta.image.configs.get((rtype, name), {})}
            changed_ids |= {image.topic_ids[n] for n in configs_changed if n in image.topic_ids}
        deleted = [t for tid, t in delta.deleted_topics.items() if tid not in image.topics]
        if whole or not self.strays_checked:
            deleted += self._strays(image)
        changed = [self._publish_topic(image, image.topics[tid]) for tid in sorted(changed_ids, key=str)
                   if tid in image.topics]
        gone = [self._cache_image_of_deleted(t) for t in deleted]
        self.replica_manager.apply_delta(changed, self._endpoints(image), gone)
        self._delete_moved_away(image)
        for t in deleted:
            self._delete(t.name)
        self.first = False
        self.image = image

    def _strays(self, image: MetadataImage) -> list[MetaTopic]:
        """Topics on disk the image does not have (Kafka: the stray logs a broker deletes once it
        has caught up with the metadata: deleted while it was down)."""
        if not self.caught_up():
            return []
        self.strays_checked = True
        known = {t.name for t in image.topics.values()}
        nothing = PartitionRegistration((), (), -1)
        return [MetaTopic(n, self.topics[n].topic_id, dict.fromkeys(self.topics[n].partitions, nothing))
                for n in list(self.topics) if n not in known]

    # -- brokers ---------------------------------------------------------------------------
    def _publish_brokers(self, image: MetadataImage) -> None:
        cache = self.metadata_cache
        cache.brokers = {b.id: ClusterBroker(b.id, {e.name: (e.host, e.port) for e in b.endpoints}, b.rack,
                                             b.fenced, b.in_controlled_shutdown, b.log_dirs)
                         for b in image.brokers.values()}
        alive = [b.node_id for b in cache.alive_brokers()]
        # Kafka's KRaft brokers name a random live broker as the controller (clients send it their
        # admin requests, which it forwards): this broker while it is live (the client reached it
        # already; a paused or partitioned broker named instead would hold the client's admin calls
        # until they time out), else keep the one named while it lives
        if self.node_id in alive:
            cache.controller_id = self.node_id
        elif cache.controller_id not in alive:
            cache.controller_id = alive[0] if alive else -1

    def _publish_broker_configs(self, delta: MetadataDelta, image: MetadataImage, whole: bool) -> bool:
        """The dynamic broker configs of the image (ConfigRecords of resource type BROKER: "" the
        cluster default, this node's id its own) made the DynamicBrokerConfig's layers (Kafka:
        DynamicConfigPublisher). Returns whether a layer changed."""
        if self.dynamic_config is None:
            return False
        changed = False
        for name, per_broker in (("", False), (str(self.node_id), True)):
            key = (BROKER_RESOURCE, name)
            raw = dict(image.configs.get(key, {}))
            if not whole and raw == dict(delta.image.configs.get(key, {})):
                continue
            try:
                parsed = DynamicBrokerConfig.validate(dict(raw), per_broker)
                if parsed != self.dynamic_config.layer(per_broker):
                    self.dynamic_config.replace_layer(per_broker, parsed)
                    changed = True
            except Exception as e:  # ConfigError: the layer stays as it was
                log.warning("broker configs %s of the metadata not applied: %s", raw, e)
        return changed

    def _endpoints(self, image: MetadataImage) -> dict[int, BrokerEndpoint]:
        out = {}
        for b in image.brokers.values():
            e = b.endpoint(self.inter_broker_listener) or (b.endpoints[0] if b.endpoints else None)
            if e is None:
                continue
            out[b.id] = BrokerEndpoint(b.id, e.host, e.port, b.rack, b.epoch, b.fenced, b.in_controlled_shutdown)
        return out

    # -- topics ----------------------------------------------------------------------------
    def _publish_topic(self, image: MetadataImage, t: MetaTopic) -> TopicImage:
        cfg = self.config()
        raw = image.configs.get((TOPIC_RESOURCE, t.name), {})
        try:
            overrides: dict[str, ConfigValue] = validate_topic_config(dict(raw))
        except Exception as e:  # a key this broker does not know: the defaults, said once
            log.warning("topic %s: config %s not applied (%s)", t.name, dict(raw), e)
            overrides = {}
        effective = effective_topic_config(cfg, overrides)
        parts = {p: PartitionImage(p, r.leader, r.leader_epoch, r.replicas, r.isr, r.partition_epoch,
                                   r.leader_recovery_state, r.elr, r.last_known_elr, r.adding_replicas,
                                   r.removing_replicas, r.directories)
                 for p, r in sorted(t.partitions.items())}
        cached = TopicImage(t.name, t.id, parts, effective, overrides, t.name in INTERNAL_TOPICS)
        self._register(t, cached, overrides, effective)
        self.metadata_cache.publish_topic(cached)
        return cached

    def _register(self, t: MetaTopic, cached: TopicImage, overrides: dict[str, ConfigValue],
                  effective: dict[str, ConfigValue]) -> None:
        current = self.topics.get(t.name)
        if current is not None and current.topic_id != t.id:
            log.info("topic %s on disk has id %s, the metadata %s: deleting the old one", t.name,
                     current.topic_id, t.id)
            self.replica_manager.remove_topic(self.topics.image(current))
            self.topics.delete(t.name)
            current = None
        log_config = to_log_config(effective)
        if current is None or current.overrides != overrides:
            self.log_manager.set_topic_overrides(t.name, dict(overrides), new_topic=current is None)
        local = {}
        for p, img in cached.partitions.items():
            if self.node_id not in img.replicas:
                continue
            if (t.name, p) in self.log_manager.offline_partitions:  # its directory failed: not made again
                if current is not None and p in current.partitions:
                    local[p] = current.partitions[p]
                continue
            assigned = directory_of(t.partitions[p], self.node_id)
            local[p] = self.log_manager.get_log(t.name, p) or self.log_manager.create_log(
                t.name, p, t.id, log_config, leader_epoch=-1, target=self._log_dir(assigned))
            self._maybe_update_assignment(t.id, p, assigned, local[p])
        if current is None:
            self.topics.put(Topic(t.name, t.id, local, overrides, effective))
        else:
            current.partitions.update(local)
            self._moved_away |= {(t.name, p) for p in current.partitions if p in cached.partitions and p not in local}
            current.overrides, current.config = overrides, effective
            for lg in local.values():
                lg.config = log_config

    # -- directories (KIP-858) -------------------------------------------------------------
    def _log_dir(self, directory_id: uuid.UUID) -> LogDir | None:
        """The online log dir with that id (a replica the metadata places in it is created there)."""
        return next((ld for ld in self.log_manager.log_dirs
                     if not ld.offline and ld.directory_id and uuid_from_kafka(ld.directory_id) == directory_id), None)

    def _maybe_update_assignment(self, topic_id: uuid.UUID, p: int, assigned: uuid.UUID, lg: Log) -> None:
        """Tell the controller where the replica is when the metadata says otherwise (Kafka:
        ReplicaManager.maybeUpdateTopicAssignment, with metadata.version >= 3.7-IV2)."""
        if self.assignments is None or not directory_assignment_supported(self._features):
            return
        ld = self.log_manager.log_dir_of(lg)
        if ld.offline or not ld.directory_id:
            return
        actual = uuid_from_kafka(ld.directory_id)
        if actual != assigned:
            self.assignments.assign(topic_id, p, actual)

    def replica_moved(self, topic: str, p: int) -> None:
        """A replica moved to another log dir (AlterReplicaLogDirs): tell the controller (Kafka:
        the ReplicaAlterLogDirsThread's directoryEventHandler.handleAssignment)."""
        t = self.image.topic(topic)
        lg = self.log_manager.get_log(topic, p)
        reg = t.partitions.get(p) if t is not None else None
        if t is not None and reg is not None and lg is not None:
            self._maybe_update_assignment(t.id, p, directory_of(reg, self.node_id), lg)

    def _delete_moved_away(self, image: MetadataImage) -> None:
        """Delete the logs of the partitions this broker is no longer a replica of, once their
        replicas stopped (Kafka: ReplicaManager.applyDelta -> stopPartitions with deleteLocalLog,
        LogManager.asyncDelete: the `-delete` rename, removal after file.delete.delay.ms). Not
        before the broker caught up with the metadata (an image half way through the log may be
        an old state, as for the stray topics): they wait, and go if a later image still does not
        place them here."""
        if not self._moved_away or not self.caught_up():
            return
        pending, self._moved_away = self._moved_away, set()
        for name, p in sorted(pending):
            t = image.topic(name)
            reg = t.partitions.get(p) if t is not None else None
            if reg is None or self.node_id in reg.replicas:
                continue  # the topic went (deleted as a topic) or the partition came back here
            topic = self.topics.get(name)
            if topic is not None:
                topic.partitions.pop(p, None)
            if self.log_manager.delete_log(name, p) is not None:
                log.info("partition %s-%d moved away from this broker: its log is deleted", name, p)

    def _cache_image_of_deleted(self, t: MetaTopic) -> TopicImage:
        cached = self.metadata_cache.topic(t.name)
        if cached is not None and cached.topic_id == t.id:
            return cached
        return TopicImage(t.name, t.id, {p: PartitionImage(p, -1, -1, (), ()) for p in t.partitions}, {}, {},
                          t.name in INTERNAL_TOPICS)

    def _delete(self, name: str) -> None:
        cached = self.metadata_cache.topic(name)
        if cached is not None:
            self.metadata_cache.remove_topic(cached)
        if name in self.topics:
            self.topics.delete(name)  # the logs renamed for deletion, the listeners told (offsets dropped)

