"""Dynamic broker keys of Apache Kafka 4.4 that minibroker accepts, keeps and reports, but does not act on.

Kafka lets AlterConfigs/IncrementalAlterConfigs set these on a running broker (DescribeConfigs on
Kafka 4.4 reports them with read_only=false). minibroker has no SASL/SSL re-login, no replica
fetchers, no tiered storage, no cleaner buffers of these kinds, no metric reporters and no share or
streams groups, so a value changes nothing here; refusing the key would still break tooling and
config files written for Kafka (kafka-configs --alter with e.g. sasl.kerberos.min.time.before.relogin
got INVALID_CONFIG "Unknown broker configs"). Each row: name, type, Kafka's default as DescribeConfigs
prints it (None: no default), sensitive. Listed from the reference broker by
tests/reference/test_differential_configs.py, which fails when Kafka's list and this one part ways.
A key that minibroker models itself (config/keys.py) takes precedence over its row here.
"""

from __future__ import annotations

KAFKA_DYNAMIC_BROKER_KEYS: tuple[tuple[str, str, str | None, bool], ...] = (
    ('background.threads', 'int', '10', False),
    ('config.providers', 'list', '', False),
    ('cordoned.log.dirs', 'list', '', False),
    ('errors.deadletterqueue.auto.create.topics.enable', 'boolean', 'false', False),
    ('errors.deadletterqueue.topic.name.prefix', 'string', 'dlq.', False),
    ('follower.fetch.last.tiered.offset.enable', 'boolean', 'false', False),
    ('group.consumer.assignment.interval.ms', 'int', '1000', False),
    ('group.coordinator.cached.buffer.max.bytes', 'int', '1048588', False),
    ('group.share.assignment.interval.ms', 'int', '1000', False),
    ('group.streams.assignment.interval.ms', 'int', '1000', False),
    ('log.cleaner.dedupe.buffer.size', 'long', '134217728', False),
    ('log.cleaner.io.buffer.load.factor', 'double', '0.9', False),
    ('log.cleaner.io.buffer.size', 'int', '524288', False),
    ('log.cleaner.io.max.bytes.per.second', 'double', '1.7976931348623157E308', False),
    ('log.remote.copy.lag.bytes', 'long', '-1', False),
    ('log.remote.copy.lag.ms', 'long', '0', False),
    ('max.connection.creation.rate', 'int', '2147483647', False),
    ('max.connections.per.ip.overrides', 'string', '', False),
    ('max.decompressed.message.bytes', 'int', '2147483639', False),
    ('metric.reporters', 'list', 'org.apache.kafka.common.metrics.JmxReporter', False),
    ('num.replica.fetchers', 'int', '1', False),
    ('principal.builder.class', 'class', 'org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder', False),
    ('remote.fetch.max.wait.ms', 'int', '500', False),
    ('remote.list.offsets.request.timeout.ms', 'long', '30000', False),
    ('remote.log.index.file.cache.total.size.bytes', 'long', '1073741824', False),
    ('remote.log.manager.copier.thread.pool.size', 'int', '10', False),
    ('remote.log.manager.copy.max.bytes.per.second', 'long', '9223372036854775807', False),
    ('remote.log.manager.expiration.thread.pool.size', 'int', '10', False),
    ('remote.log.manager.fetch.max.bytes.per.second', 'long', '9223372036854775807', False),
    ('remote.log.manager.follower.thread.pool.size', 'int', '2', False),
    ('remote.log.reader.threads', 'int', '10', False),
    ('sasl.enabled.mechanisms', 'list', 'GSSAPI', False),
    ('sasl.jaas.config', 'password', None, True),
    ('sasl.kerberos.kinit.cmd', 'string', '/usr/bin/kinit', False),
    ('sasl.kerberos.min.time.before.relogin', 'long', '60000', False),
    ('sasl.kerberos.principal.to.local.rules', 'list', 'DEFAULT', False),
    ('sasl.kerberos.service.name', 'string', None, False),
    ('sasl.kerberos.ticket.renew.jitter', 'double', '0.05', False),
    ('sasl.kerberos.ticket.renew.window.factor', 'double', '0.8', False),
    ('sasl.login.refresh.buffer.seconds', 'short', '300', False),
    ('sasl.login.refresh.min.period.seconds', 'short', '60', False),
    ('sasl.login.refresh.window.factor', 'double', '0.8', False),
    ('sasl.login.refresh.window.jitter', 'double', '0.05', False),
    ('sasl.mechanism.inter.broker.protocol', 'string', 'GSSAPI', False),
    ('share.coordinator.cached.buffer.max.bytes', 'int', '1048588', False),
    ('ssl.cipher.suites', 'list', '', False),
    ('ssl.client.auth', 'string', 'none', False),
    ('ssl.enabled.protocols', 'list', 'TLSv1.2,TLSv1.3', False),
    ('ssl.endpoint.identification.algorithm', 'string', 'https', False),
    ('ssl.engine.factory.class', 'class', None, False),
    ('ssl.key.password', 'password', None, True),
    ('ssl.keymanager.algorithm', 'string', 'SunX509', False),
    ('ssl.keystore.certificate.chain', 'password', None, True),
    ('ssl.keystore.key', 'password', None, True),
    ('ssl.keystore.location', 'string', None, False),
    ('ssl.keystore.password', 'password', None, True),
    ('ssl.keystore.type', 'string', 'JKS', False),
    ('ssl.protocol', 'string', 'TLSv1.3', False),
    ('ssl.provider', 'string', None, False),
    ('ssl.secure.random.implementation', 'string', None, False),
    ('ssl.trustmanager.algorithm', 'string', 'PKIX', False),
    ('ssl.truststore.certificates', 'password', None, True),
    ('ssl.truststore.location', 'string', None, False),
    ('ssl.truststore.password', 'password', None, True),
    ('ssl.truststore.type', 'string', 'JKS', False),
    ('transaction.partition.verification.enable', 'boolean', 'true', False),
)

# Kafka keeps security keys per broker (DynamicBrokerConfig's per-broker configs: a cluster-wide
# default is refused with INVALID_REQUEST), and the keystore/truststore keys per listener (they need a
# `listener.name.<l>.` prefix, also INVALID_REQUEST).
PER_LISTENER_PREFIXES = ("ssl.keystore.", "ssl.truststore.", "ssl.key.")


def per_broker_only(name: str) -> bool:
    """A key Kafka refuses at the cluster-default level ("broker id must be specified")."""
    return name.startswith(("ssl.", "sasl.")) or name in ("principal.builder.class", "cordoned.log.dirs")


def per_listener_only(name: str) -> bool:
    return name.startswith(PER_LISTENER_PREFIXES)

# Kafka's broker quota configs (QuotaConfig, DynamicConfig.Broker): the replication throttles that
# kafka-reassign-partitions sets with --throttle and clears with --verify. Kafka's controller
# accepts them for a broker resource although DescribeConfigs does not list them; minibroker applies
# the two rates (minibroker.quotas.replication_quota), not replica.alter.log.dirs.io.max.bytes.per.second.
REPLICATION_THROTTLE_KEYS: frozenset[str] = frozenset({
    "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second"})
