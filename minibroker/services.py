"""What request handlers are handed: the broker's components, typed (Kafka: the collaborators
`KafkaApis` is constructed with — ReplicaManager, GroupCoordinator, TxnCoordinator, MetadataCache,
KafkaConfig).

`BrokerServer.build` (minibroker.server) builds one `BrokerServices`; every `RequestContext`
carries it. Handlers read from it and call into it; nothing here reaches back into the server, the
connection or the dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.client_metrics import ClientMetricsConfigs
from minibroker.config import BrokerConfig, Endpoint
from minibroker.coordinator.group.consumer_group_configs import ConsumerGroupConfigs
from minibroker.coordinator.txn.producer_id_manager import ProducerIdManager
from minibroker.coordinators import Coordinators
from minibroker.dynamic_config import DynamicBrokerConfig
from minibroker.features import FeatureLevels, static_levels
from minibroker.fetch_sessions import FetchSessionCache
from minibroker.metadata_cache import MetadataCache
from minibroker.metrics import BrokerMetrics
from minibroker.quotas.manager import ClientQuotaManager
from minibroker.quotas.store import QuotaStore
from minibroker.replica_manager import ReplicaManager
from minibroker.security.authorizer import Authorizer
from minibroker.security.credentials import ScramCredentialStore
from minibroker.topics import TopicRegistry
from minibroker_protocol.schema import Versions
from minibroker_storage.clock import Clock
from minibroker_storage.log_manager import LogManager

if TYPE_CHECKING:  # built when first needed (minibroker.coordinators): not imported at start-up
    from minibroker.coordinator.group.group_coordinator import GroupCoordinator
    from minibroker.coordinator.share.share_group import ShareGroupCoordinator
    from minibroker.coordinator.txn.transaction_coordinator import TransactionCoordinator


@dataclass(eq=False, slots=True)
class BrokerServices:
    node_id: int
    host: str  # advertised host and port (Metadata, FindCoordinator, DescribeCluster)
    port: int
    started_ms: int
    clock: Clock
    dynamic_config: DynamicBrokerConfig
    log_manager: LogManager
    topics: TopicRegistry  # the metadata's one writer (create/delete topics, configs); handlers read metadata_cache
    metadata_cache: MetadataCache  # topics, partitions (leader, epoch, replicas, ISR), brokers
    replica_manager: ReplicaManager  # every partition's log: appends, fetches, offsets
    coordinators: Coordinators  # group_coordinator, txn_coordinator, share_groups below
    producer_ids: ProducerIdManager
    fetch_sessions: FetchSessionCache
    metrics: BrokerMetrics
    quota_store: QuotaStore  # client quotas (DescribeClientQuotas / AlterClientQuotas)
    # listener name -> the address advertised to clients that came in on it (the first listener's
    # is host/port above)
    advertised: dict[str, Endpoint]
    scram_credentials: ScramCredentialStore  # Describe/AlterUserScramCredentials
    authorizer: Authorizer  # ACLs and the authorization decision (minibroker.security.authorizer)
    client_quotas: ClientQuotaManager  # Fetch caps max_bytes at the consumer's quota window
    consumer_group_configs: ConsumerGroupConfigs  # consumer.* keys of GROUP config resources (KIP-848)
    client_metrics: ClientMetricsConfigs  # CLIENT_METRICS config resources (KIP-714)
    # the API keys and versions this broker serves (ApiVersions): the registry's table less the
    # share-group APIs when group.share.enable=false
    served_versions: Mapping[int, Versions]
    # ApiVersions' features (KIP-584): the table's, or a KRaft broker's registered levels and the
    # metadata log's finalized ones (minibroker.kafka_raft_server)
    feature_levels: Callable[[], FeatureLevels] = static_levels

    @property
    def group_coordinator(self) -> GroupCoordinator:
        return self.coordinators.group

    @property
    def txn_coordinator(self) -> TransactionCoordinator:
        return self.coordinators.txn

    @property
    def share_groups(self) -> ShareGroupCoordinator:
        """KIP-932 share groups and their share partitions."""
        return self.coordinators.share

    def endpoint(self, listener: str | None) -> tuple[str, int]:
        """(host, port) for Metadata, FindCoordinator and DescribeCluster answers to a client on
        `listener` (Kafka answers with the endpoint of the listener the request came in on)."""
        e = self.advertised.get(listener) if listener is not None else None
        return (e.host, e.port) if e is not None else (self.host, self.port)

    @property
    def config(self) -> BrokerConfig:
        """The broker config in force now (static config under the dynamic layers)."""
        return self.dynamic_config.current

    @property
    def cluster_id(self) -> str:
        return self.log_manager.cluster_id
