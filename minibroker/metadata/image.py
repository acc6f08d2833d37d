"""The cluster's metadata as of one offset of the metadata log (Kafka: MetadataImage, MetadataDelta).

Theory of operation. A `MetadataImage` is immutable: features, broker registrations, topics with
their partitions (minibroker.metadata.partition_registration), configs and the producer-id
high-water mark, plus the log offset and epoch it reflects. A `MetadataDelta` replays records on
top of an image (`replay`) and makes the next image (`apply`), remembering what changed: that is
what a broker hands its publishers after each committed batch (Kafka: MetadataLoader ->
MetadataPublisher.onMetadataUpdate), and `local_changes(broker_id)` is the part a ReplicaManager
acts on (Kafka: TopicsDelta.localChanges: partitions to lead, to follow, to delete). The
controller keeps its own state as an image too, replaying each record it writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from minibroker.metadata.controller_registration import ControllerRegistration
from minibroker.metadata.partition_registration import PartitionRegistration
from minibroker.security.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from minibroker_protocol import metadata_records as mr
from minibroker_protocol.metadata_serde import ApiMessageAndVersion
from minibroker_protocol.schema import Message

FENCE = 1  # BrokerRegistrationChangeRecord.fenced (Kafka: BrokerRegistrationFencingChange)
UNFENCE = -1
TOPIC_RESOURCE = 2  # ConfigRecord.resource_type (Kafka: ConfigResource.Type.TOPIC)
BROKER_RESOURCE = 4
GROUP_RESOURCE = 32  # KIP-848 group configs (Kafka: ConfigResource.Type.GROUP)


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """Kafka: BrokerRegistration (from RegisterBrokerRecord and the changes after it)."""

    id: int
    epoch: int
    incarnation_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    log_dirs: tuple[uuid.UUID, ...] = ()

    def endpoint(self, listener: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == listener), None)


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]


@dataclass(frozen=True, slots=True)
class MetadataImage:
    offset: int = -1  # the last record this image includes
    epoch: int = 0
    features: Mapping[str, int] = field(default_factory=dict)
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    topics: Mapping[uuid.UUID, TopicImage] = field(default_factory=dict)
    topic_ids: Mapping[str, uuid.UUID] = field(default_factory=dict)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)
    next_producer_id: int = 0
    # ACLs by record id (Kafka: AclsImage), what every broker's authorizer decides on
    acls: Mapping[uuid.UUID, AclBinding] = field(default_factory=dict)
    # SCRAM credentials (Kafka: ScramImage): (user, mechanism type) -> the record
    scram: Mapping[tuple[str, int], mr.UserScramCredentialRecord] = field(default_factory=dict)
    # client quotas (Kafka: ClientQuotasImage): sorted (entity type, name) pairs -> key -> value
    quotas: Mapping[tuple[tuple[str, str | None], ...], Mapping[str, float]] = field(default_factory=dict)
    # delegation tokens (Kafka: DelegationTokenImage): token id -> the record (never the HMAC)
    delegation_tokens: Mapping[str, mr.DelegationTokenRecord] = field(default_factory=dict)
    # controller registrations (KIP-919; Kafka: ClusterImage.controllers)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=dict)

    def topic(self, name: str) -> TopicImage | None:
        tid = self.topic_ids.get(name)
        return self.topics.get(tid) if tid is not None else None

    def records(self) -> list[ApiMessageAndVersion]:
        """The records that rebuild this image from nothing: a snapshot's content (Kafka: MetadataImage.write)."""
        out = [ApiMessageAndVersion(mr.FEATURE_LEVEL_RECORD(name=n, feature_level=level), 0)
               for n, level in sorted(self.features.items())]
        for b in sorted(self.brokers.values(), key=lambda b: b.id):
            out.append(ApiMessageAndVersion(register_broker_record(b), 3))
        out += [ApiMessageAndVersion(c.to_record(), 0) for _, c in sorted(self.controllers.items())]
        for t in sorted(self.topics.values(), key=lambda t: t.name):
            out.append(ApiMessageAndVersion(mr.TOPIC_RECORD(name=t.name, topic_id=t.id), 0))
            out += [ApiMessageAndVersion(p.to_record(t.id, i), 2) for i, p in sorted(t.partitions.items())]
        for (rtype, rname), kv in sorted(self.configs.items()):
            out += [ApiMessageAndVersion(mr.CONFIG_RECORD(resource_type=rtype, resource_name=rname, name=k, value=v), 0)
                    for k, v in sorted(kv.items())]
        if self.next_producer_id > 0:
            out.append(ApiMessageAndVersion(mr.PRODUCER_IDS_RECORD(broker_id=-1, broker_epoch=-1,
                                                                   next_producer_id=self.next_producer_id), 0))
        out += [ApiMessageAndVersion(acl_record(i, a), 0) for i, a in sorted(self.acls.items())]
        out += [ApiMessageAndVersion(r, 0) for _, r in sorted(self.scram.items())]
        for entity, values in sorted(self.quotas.items(), key=lambda kv: [(t, n or "") for t, n in kv[0]]):
            out += [ApiMessageAndVersion(quota_record(entity, k, v), 0) for k, v in sorted(values.items())]
        out += [ApiMessageAndVersion(r, 0) for _, r in sorted(self.delegation_tokens.items())]
        return out


def acl_record(acl_id: uuid.UUID, a: AclBinding) -> mr.AccessControlEntryRecord:
    return mr.ACCESS_CONTROL_ENTRY_RECORD(id=acl_id, resource_type=a.resource_type, resource_name=a.resource_name,
                                          pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                                          operation=a.operation, permission_type=a.permission)


def quota_record(entity: tuple[tuple[str, str | None], ...], key: str, value: float | None
                 ) -> mr.ClientQuotaRecord:
    """`value` None: the key removed."""
    rec = mr.CLIENT_QUOTA_RECORD
    return rec(entity=[rec.EntityData(entity_type=t, entity_name=n) for t, n in entity], key=key,
               value=0.0 if value is None else value, remove=value is None)


def acl_binding(r: mr.AccessControlEntryRecord) -> AclBinding:
    return AclBinding(ResourceType(r.resource_type), r.resource_name, PatternType(r.pattern_type), r.principal,
                      r.host, AclOperation(r.operation), AclPermissionType(r.permission_type))


def register_broker_record(b: BrokerRegistration) -> mr.RegisterBrokerRecord:
    rec = mr.REGISTER_BROKER_RECORD
    return rec(broker_id=b.id, incarnation_id=b.incarnation_id, broker_epoch=b.epoch, rack=b.rack, fenced=b.fenced,
               in_controlled_shutdown=b.in_controlled_shutdown, log_dirs=list(b.log_dirs),
               end_points=[rec.BrokerEndpoint(name=e.name, host=e.host, port=e.port,
                                              security_protocol=e.security_protocol) for e in b.endpoints],
               features=[rec.BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                         for n, (lo, hi) in sorted(b.features.items())])


@dataclass(slots=True)
class LocalReplicaChanges:
    """What one broker must do after a delta (Kafka: LocalReplicaChanges): keyed by (topic name, partition)."""

    leaders: dict[tuple[str, int], tuple[uuid.UUID, PartitionRegistration]] = field(default_factory=dict)
    followers: dict[tuple[str, int], tuple[uuid.UUID, PartitionRegistration]] = field(default_factory=dict)
    deletes: set[tuple[str, int]] = field(default_factory=set)


class MetadataDelta:
    """Records replayed on top of `image`; `apply` makes the next image."""

    def __init__(self, image: MetadataImage):
        self.image = image
        self.features = dict(image.features)
        self.brokers = dict(image.brokers)
        self.topics = dict(image.topics)
        self.topic_ids = dict(image.topic_ids)
        self.configs = {k: dict(v) for k, v in image.configs.items()}
        self.next_producer_id = image.next_producer_id
        self.acls = dict(image.acls)
        self.acls_changed = False
        self.scram = dict(image.scram)
        self.scram_changed = False
        self.quotas = {k: dict(v) for k, v in image.quotas.items()}
        self.quotas_changed = False
        self.delegation_tokens = dict(image.delegation_tokens)
        self.delegation_tokens_changed = False
        self.changed_partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
        self.deleted_topics: dict[uuid.UUID, TopicImage] = {}
        self.changed_brokers: set[int] = set()
        self.controllers = dict(image.controllers)
        self.changed_controllers: set[int] = set()

    def replay(self, record: ApiMessageAndVersion | Message) -> None:
        m = record.message if isinstance(record, ApiMessageAndVersion) else record
        if isinstance(m, mr.PartitionChangeRecord):
            self._partition(m.topic_id, m.partition_id, self._current(m.topic_id, m.partition_id).merge(m))
        elif isinstance(m, mr.PartitionRecord):
            self._partition(m.topic_id, m.partition_id, PartitionRegistration.from_record(m))
        elif isinstance(m, mr.TopicRecord):
            self.topics[m.topic_id] = TopicImage(m.name, m.topic_id, {})
            self.topic_ids[m.name] = m.topic_id
        elif isinstance(m, mr.RemoveTopicRecord):
            gone = self.topics.pop(m.topic_id)
            self.topic_ids.pop(gone.name, None)
            self.changed_partitions.pop(m.topic_id, None)
            self.deleted_topics[m.topic_id] = self.image.topics.get(m.topic_id, gone)
            self.configs.pop((TOPIC_RESOURCE, gone.name), None)
        elif isinstance(m, mr.RegisterBrokerRecord):
            self.brokers[m.broker_id] = BrokerRegistration(
                m.broker_id, m.broker_epoch, m.incarnation_id,
                tuple(Endpoint(e.name, e.host, e.port, e.security_protocol) for e in m.end_points), m.rack,
                m.fenced, m.in_controlled_shutdown,
                {f.name: (f.min_supported_version, f.max_supported_version) for f in m.features}, tuple(m.log_dirs))
            self.changed_brokers.add(m.broker_id)
        elif isinstance(m, mr.BrokerRegistrationChangeRecord):
            b = self.brokers[m.broker_id]
            if m.fenced:
                b = replace(b, fenced=m.fenced == FENCE)
            if m.in_controlled_shutdown:
                b = replace(b, in_controlled_shutdown=True)
            if m.log_dirs:  # the directories still online (KIP-858; an empty list changes nothing)
                b = replace(b, log_dirs=tuple(m.log_dirs))
            self.brokers[m.broker_id] = b
            self.changed_brokers.add(m.broker_id)
        elif isinstance(m, mr.FenceBrokerRecord | mr.UnfenceBrokerRecord):
            self.brokers[m.id] = replace(self.brokers[m.id], fenced=isinstance(m, mr.FenceBrokerRecord))
            self.changed_brokers.add(m.id)
        elif isinstance(m, mr.UnregisterBrokerRecord):
            self.brokers.pop(m.broker_id, None)
            self.changed_brokers.add(m.broker_id)
        elif isinstance(m, mr.RegisterControllerRecord):
            self.controllers[m.controller_id] = ControllerRegistration.from_record(m)
            self.changed_controllers.add(m.controller_id)
        elif isinstance(m, mr.UnregisterControllerRecord):
            self.controllers.pop(m.controller_id, None)
            self.changed_controllers.add(m.controller_id)
        elif isinstance(m, mr.FeatureLevelRecord):
            if m.feature_level == 0:
                self.features.pop(m.name, None)
            else:
                self.features[m.name] = m.feature_level
        elif isinstance(m, mr.ConfigRecord):
            kv = self.configs.setdefault((m.resource_type, m.resource_name), {})
            if m.value is None:
                kv.pop(m.name, None)
            else:
                kv[m.name] = m.value
        elif isinstance(m, mr.ProducerIdsRecord):
            self.next_producer_id = m.next_producer_id
        elif isinstance(m, mr.AccessControlEntryRecord):
            self.acls[m.id] = acl_binding(m)
            self.acls_changed = True
        elif isinstance(m, mr.RemoveAccessControlEntryRecord):
            self.acls.pop(m.id, None)
            self.acls_changed = True
        elif isinstance(m, mr.UserScramCredentialRecord):
            self.scram[(m.name, m.mechanism)] = m
            self.scram_changed = True
        elif isinstance(m, mr.RemoveUserScramCredentialRecord):
            self.scram.pop((m.name, m.mechanism), None)
            self.scram_changed = True
        elif isinstance(m, mr.ClientQuotaRecord):
            entity = tuple(sorted((e.entity_type, e.entity_name) for e in m.entity))
            values = self.quotas.setdefault(entity, {})
            if m.remove:
                values.pop(m.key, None)
                if not values:
                    del self.quotas[entity]
            else:
                values[m.key] = m.value
            self.quotas_changed = True
        elif isinstance(m, mr.DelegationTokenRecord):
            self.delegation_tokens[m.token_id] = m
            self.delegation_tokens_changed = True
        elif isinstance(m, mr.RemoveDelegationTokenRecord):
            self.delegation_tokens.pop(m.token_id, None)
            self.delegation_tokens_changed = True
        elif isinstance(m, mr.ClearElrRecord):
            # KIP-966: written when eligible.leader.replicas.version goes back to 0; an empty
            # name clears every topic's (Kafka: ReplicationControlManager.replay(ClearElrRecord))
            for tid, t in list(self.topics.items()):
                if m.topic_name in ("", None, t.name):
                    for p, reg in t.partitions.items():
                        if reg.elr or reg.last_known_elr:
                            self._partition(tid, p, replace(reg, elr=(), last_known_elr=()))
        # the other types: metadata_batch_loader.py (transactions, and NOT_KEPT with why)

    def _current(self, topic_id: uuid.UUID, partition: int) -> PartitionRegistration:
        return self.topics[topic_id].partitions[partition]

    def _partition(self, topic_id: uuid.UUID, partition: int, reg: PartitionRegistration) -> None:
        t = self.topics[topic_id]
        self.topics[topic_id] = TopicImage(t.name, t.id, {**t.partitions, partition: reg})
        self.changed_partitions.setdefault(topic_id, {})[partition] = reg

    def apply(self, offset: int, epoch: int) -> MetadataImage:
        return MetadataImage(offset, epoch, self.features, self.brokers, self.topics, self.topic_ids,
                             self.configs, self.next_producer_id, self.acls, self.scram, self.quotas,
                             self.delegation_tokens, self.controllers)

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """The partitions `broker_id` now leads or follows (changed in this delta), and those it must delete."""
        out = LocalReplicaChanges()
        for t in self.deleted_topics.values():
            out.deletes |= {(t.name, p) for p, reg in t.partitions.items() if broker_id in reg.replicas}
        for tid, parts in self.changed_partitions.items():
            name = self.topics[tid].name
            for p, reg in parts.items():
                before = self.image.topics.get(tid)
                old = before.partitions.get(p) if before is not None else None
                if broker_id not in reg.replicas:
                    if old is not None and broker_id in old.replicas:
                        out.deletes.add((name, p))  # reassigned away
                    continue
                (out.leaders if reg.leader == broker_id else out.followers)[(name, p)] = (tid, reg)
        return out
