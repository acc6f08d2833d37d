"""The key tables: every broker key and every topic key minibroker accepts.

Names, types, defaults and valid ranges are Kafka's (ServerLogConfigs, ServerConfigs,
SocketServerConfigs, GroupCoordinatorConfig, TransactionLogConfig, TransactionStateManagerConfig,
CleanerConfig, LogConfig); the doc strings are ours and are what DescribeConfigs returns as each
key's documentation, so they say what minibroker does, not what Kafka does. A key that is accepted
(so Kafka tooling and configs keep working) but changes nothing here says so in its doc. Where we
deliberately differ from Kafka's default for a better single-node dev broker, the doc says
"Dev default" and why.

A topic key lists its broker synonyms, most specific first, as Kafka's ServerTopicConfigSynonyms
does (``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``):
the first synonym with a value gives the topic key its broker-wide default.
"""

from __future__ import annotations

import dataclasses

from minibroker.config.definitions import (
    INT_MAX,
    LONG_MAX,
    AtLeast,
    Between,
    ConfigKey,
    ConfigValue,
    GzipLevel,
    MetadataVersionValidator,
    NonEmptyString,
    ThrottledReplicas,
    Validator,
    ValidList,
    ValidString,
    parse_value,
)
from minibroker.config.kafka_dynamic import KAFKA_DYNAMIC_BROKER_KEYS

# --------------------------------------------------------------------------- the key tables

_MIN_SEGMENT_BYTES = 14  # LegacyRecord.RECORD_OVERHEAD_V0: a segment must hold one v0 record
_DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # 1 MiB + Records.LOG_OVERHEAD (offset + size)
_WEEK_MS = 7 * 24 * 3600 * 1000
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")  # BrokerCompressionType
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
_CLEANUP_POLICIES = ("compact", "delete")
_PROTOCOL_MAP_DEFAULT = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
# Docs of keys minibroker accepts (so Kafka configs and tooling keep working) but does not act on all
# say "Accepted, no effect here" and why: DescribeConfigs hands the doc to clients as documentation.
NO_EFFECT = "Accepted, no effect here"
_NOT_HERE = f" {NO_EFFECT}: a single-node broker has no followers."
_NO_TIERED = f" {NO_EFFECT}: minibroker has no tiered storage."


def _no_effect(why: str) -> str:
    return f" {NO_EFFECT}: {why}."


def _topic(name: str, kind: str, default: ConfigValue, doc: str, validator: Validator | None = None,
           synonyms: tuple[str, ...] = ()) -> ConfigKey:
    return ConfigKey(name, kind, default, doc, validator, "topic", synonyms, read_only=False)


_TOPIC_KEYS: list[ConfigKey] = [
    _topic("cleanup.policy", "list", ["delete"],
           "How old segments are retired: 'delete' drops them by retention.ms/retention.bytes, 'compact' keeps "
           "the newest record per key; both may be listed.",
           ValidList(*_CLEANUP_POLICIES), ("log.cleanup.policy",)),
    _topic("compression.type", "string", "producer",
           "Codec of batches as stored: 'producer' keeps what the producer sent; a codec name makes the "
           "broker recompress batches that arrive in another codec.",
           ValidString(*_COMPRESSION_TYPES), ("compression.type",)),
    _topic("compression.gzip.level", "int", -1, "gzip level for batches the broker recompresses to gzip (-1 = zlib default)."
           + _no_effect("recompression uses each codec's default level"),
           GzipLevel(), ("compression.gzip.level",)),
    _topic("compression.lz4.level", "int", 9, "lz4 level for batches the broker recompresses to lz4."
           + _no_effect("recompression uses each codec's default level"),
           Between(1, 17), ("compression.lz4.level",)),
    _topic("compression.zstd.level", "int", 3, "zstd level for batches the broker recompresses to zstd."
           + _no_effect("recompression uses each codec's default level"),
           Between(-131072, 22), ("compression.zstd.level",)),
    _topic("delete.retention.ms", "long", 24 * 3600 * 1000,
           "On compacted topics, how long a tombstone (null value) stays readable after its segment was cleaned.",
           AtLeast(0), ("log.cleaner.delete.retention.ms",)),
    _topic("errors.deadletterqueue.group.enable", "boolean", False,
           "Whether share groups may write the records they give up on to this topic, their dead-letter "
           "queue (KIP-1191: errors.deadletterqueue.topic.name of a GROUP names it)."),
    _topic("file.delete.delay.ms", "long", 60000,
           "How long a retired segment waits under its .deleted name before its files are removed.",
           AtLeast(0), ("log.segment.delete.delay.ms",)),
    _topic("flush.messages", "long", LONG_MAX,
           "fsync the partition after this many appended messages; the default leaves flushing to the OS.",
           AtLeast(1), ("log.flush.interval.messages",)),
    _topic("flush.ms", "long", LONG_MAX,
           "fsync the partition when it has unflushed data and its last flush is this long ago (checked every "
           "log.flush.scheduler.interval.ms, at least once a second); the default leaves flushing to the OS.",
           AtLeast(0), ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    _topic("follower.replication.throttled.replicas", "list", [],
           "Replicas whose follower fetching is throttled (KIP-73: `partition:broker` pairs or `*`).",
           ThrottledReplicas("follower.replication.throttled.replicas")),
    _topic("index.interval.bytes", "int", 4096,
           "Bytes appended between two offset-index entries; smaller means denser indexes and shorter scans.",
           AtLeast(0), ("log.index.interval.bytes",)),
    _topic("leader.replication.throttled.replicas", "list", [],
           "Replicas whose leader-side replication is throttled (KIP-73: `partition:broker` pairs or `*`).",
           ThrottledReplicas("leader.replication.throttled.replicas")),
    _topic("local.retention.bytes", "long", -2,
           "Bytes kept locally when tiered storage is on (-2 = use retention.bytes)." + _NO_TIERED,
           AtLeast(-2), ("log.local.retention.bytes",)),
    _topic("local.retention.ms", "long", -2,
           "Time kept locally when tiered storage is on (-2 = use retention.ms)." + _NO_TIERED,
           AtLeast(-2), ("log.local.retention.ms",)),
    _topic("max.compaction.lag.ms", "long", LONG_MAX,
           "Longest a record may stay uncompacted before its segment becomes eligible regardless of dirty ratio.",
           AtLeast(1), ("log.cleaner.max.compaction.lag.ms",)),
    _topic("max.message.bytes", "int", _DEFAULT_MAX_MESSAGE_BYTES,
           "Largest record batch (after compression) the topic accepts; larger ones get MESSAGE_TOO_LARGE.",
           AtLeast(0), ("message.max.bytes",)),
    _topic("message.downconversion.enable", "boolean", True,
           "Whether fetches older than Fetch v4 may receive down-converted (v0/v1) batches; if false they get "
           "UNSUPPORTED_VERSION.", None, ("log.message.downconversion.enable",)),
    _topic("message.format.version", "string", "3.0-IV1",
           "Newest on-disk record format: before 0.10.0 writes magic 0, before 0.11.0 magic 1, later magic 2. "
           "Deprecated in Kafka 3.x, which ignores it; minibroker honours it to pick the stored magic.",
           MetadataVersionValidator(), ("log.message.format.version",)),
    _topic("message.timestamp.after.max.ms", "long", LONG_MAX,
           "How far ahead of the broker's clock a CreateTime timestamp may be before the batch is rejected.",
           AtLeast(0), ("log.message.timestamp.after.max.ms",)),
    _topic("message.timestamp.before.max.ms", "long", LONG_MAX,
           "How far behind the broker's clock a CreateTime timestamp may be before the batch is rejected.",
           AtLeast(0), ("log.message.timestamp.before.max.ms",)),
    _topic("message.timestamp.difference.max.ms", "long", LONG_MAX,
           "Deprecated (KIP-937): both bounds at once; used only while the before/after keys keep their defaults.",
           AtLeast(0), ("log.message.timestamp.difference.max.ms",)),
    _topic("message.timestamp.type", "string", "CreateTime",
           "CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock.",
           ValidString(*_TIMESTAMP_TYPES), ("log.message.timestamp.type",)),
    _topic("min.cleanable.dirty.ratio", "double", 0.5,
           "Compaction starts once this share of the log is uncompacted (0..1).",
           Between(0, 1), ("log.cleaner.min.cleanable.ratio",)),
    _topic("min.compaction.lag.ms", "long", 0,
           "Shortest time a record stays uncompacted.", AtLeast(0), ("log.cleaner.min.compaction.lag.ms",)),
    _topic("min.insync.replicas", "int", 1,
           "Replicas that must hold a write for acks=all. A single node has one replica, so a value above 1 makes "
           "acks=all writes fail with NOT_ENOUGH_REPLICAS, as in Kafka.",
           AtLeast(1), ("min.insync.replicas",)),
    _topic("preallocate", "boolean", False, "Whether a new segment file is allocated at full size up front."
           + _no_effect("segment files grow as they are written"),
           None, ("log.preallocate",)),
    _topic("remote.log.copy.disable", "boolean", False, "Stop copying segments to tiered storage." + _NO_TIERED),
    _topic("remote.log.delete.on.disable", "boolean", False,
           "Delete tiered data when tiered storage is turned off." + _NO_TIERED),
    _topic("remote.storage.enable", "boolean", False,
           "Tiered storage for the topic. As in a Kafka broker without remote.log.storage.system.enable, "
           "true is refused."),
    _topic("retention.bytes", "long", -1,
           "Largest size a partition may reach before its oldest segments are deleted (-1 = no size limit).",
           None, ("log.retention.bytes",)),
    _topic("retention.ms", "long", _WEEK_MS,
           "How long a segment is kept after its newest record before it is deleted (-1 = no time limit).",
           AtLeast(-1), ("log.retention.ms", "log.retention.minutes", "log.retention.hours")),
    _topic("segment.bytes", "int", 1024 * 1024 * 1024,
           "A segment is rolled when an append would take it past this size.",
           AtLeast(_MIN_SEGMENT_BYTES), ("log.segment.bytes",)),
    _topic("segment.index.bytes", "int", 10 * 1024 * 1024,
           "Preallocated size of a segment's offset and time indexes; a full index also rolls the segment.",
           AtLeast(4), ("log.index.size.max.bytes",)),
    _topic("segment.jitter.ms", "long", 0,
           "Random amount up to this subtracted from segment.ms per segment, so partitions do not roll together.",
           AtLeast(0), ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    _topic("segment.ms", "long", _WEEK_MS,
           "A segment is rolled once its first record is this old, even if it is not full.",
           AtLeast(1), ("log.roll.ms", "log.roll.hours")),
    _topic("unclean.leader.election.enable", "boolean", False,
           "Whether an out-of-sync replica may become leader." + _NOT_HERE, None,
           ("unclean.leader.election.enable",)),
    # Confluent Server's broker-side schema validation (not Apache Kafka keys; minibroker.schema_registry)
    _topic("confluent.key.schema.validation", "boolean", False,
           "Refuse (INVALID_RECORD) records whose non-null key does not start with magic byte 0 and a schema id "
           "registered under the subject <topic>-key in the built-in schema registry (Confluent Server's key)."),
    _topic("confluent.value.schema.validation", "boolean", False,
           "Refuse (INVALID_RECORD) records whose non-null value does not start with magic byte 0 and a schema id "
           "registered under the subject <topic>-value in the built-in schema registry (Confluent Server's key)."),
]


def _broker(name: str, kind: str, default: ConfigValue, doc: str, validator: Validator | None = None,
            *, dynamic: bool = False, sensitive: bool = False) -> ConfigKey:
    return ConfigKey(name, kind, default, doc, validator, "broker", (), read_only=not dynamic, sensitive=sensitive)


_UNUSED = _no_effect("minibroker runs one asyncio loop")
_ONE_REPLICA = (" Dev default 1 (Kafka: {k}): a single node can only host one replica, and with more "
                "the internal topic could never be created.")

_BROKER_KEYS: list[ConfigKey] = [
    # --- identity
    _broker("node.id", "int", 1,
            "This node's id, reported in Metadata and FindCoordinator. Dev default 1 (Kafka has none and "
            "requires it) so a bare start works.", AtLeast(0)),
    _broker("broker.id", "int", -1, "Older name of node.id; when only one of the two is set, the other follows it.",
            AtLeast(-1)),
    _broker("cluster.id", "string", None,
            "minibroker's own key: the cluster id reported to clients. Unset means generate one (Kafka keeps it "
            "in meta.properties, written by kafka-storage format).", NonEmptyString()),
    # --- network
    _broker("listeners", "string", "PLAINTEXT://127.0.0.1:9092",
            "Comma-separated NAME://host:port addresses to accept connections on; an empty host binds every "
            "interface. Dev default 127.0.0.1:9092 (Kafka: PLAINTEXT://:9092, all interfaces) so a dev broker "
            "is not reachable from the network unless asked.", dynamic=True),
    _broker("advertised.listeners", "string", None,
            "Addresses given to clients in Metadata; unset means the same as listeners.", dynamic=True),
    _broker("listener.security.protocol.map", "string", _PROTOCOL_MAP_DEFAULT,
            "Listener name to security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL are served.", dynamic=True),
    # --- security (minibroker.security); per-listener forms listener.name.<l>.[<mech>.]<key> too
    _broker("sasl.enabled.mechanisms", "list", ["GSSAPI"],
            "SASL mechanisms served on SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (GSSAPI, "
            "Kafka's default, is not served here: set the list)."),
    _broker("sasl.server.callback.handler.python", "string", None,
            "minibroker's stand-in for Kafka's sasl.server.callback.handler.class (usually per listener: "
            "listener.name.<l>.oauthbearer.sasl.server.callback.handler.python): package.module:callable, the "
            "OAUTHBEARER token validator (docs/security.md). Unset: Kafka's unsecured JWS validator."),
    _broker("connections.max.reauth.ms", "long", 0,
            "KIP-368: a SASL session lasts this long, then the client re-authenticates on the connection "
            "(0: sessions never end; an OAUTHBEARER session ends when its token expires if that is sooner). "
            "Per listener and mechanism: listener.name.<l>.<mechanism>.connections.max.reauth.ms.", AtLeast(0)),
    _broker("connection.failed.authentication.delay.ms", "int", 100,
            "A failed SASL login is answered, and its connection closed, after this delay.", AtLeast(0)),
    _broker("sasl.server.max.receive.size", "int", 524288,
            "Largest frame a client may send before it has authenticated.", AtLeast(1)),
    # --- ACLs (minibroker.security.authorizer)
    _broker("authorizer.class.name", "string", "",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) "
            "turns ACL checks on with StandardAuthorizer's rules; empty: everyone may do anything."),
    _broker("super.users", "string", None, "Principals (User:name;User:other) the authorizer always allows."),
    _broker("allow.everyone.if.no.acl.found", "boolean", False,
            "With an authorizer: whether a resource with no ACL at all is open to everyone."),
    # --- TLS on SSL and SASL_SSL listeners (minibroker.security.tls); listener.name.<l>.ssl.* wins
    _broker("ssl.keystore.type", "string", "JKS",
            "PEM or PKCS12 (JKS, Kafka's default, is not read here: convert it with keytool to PKCS12)."),
    _broker("ssl.keystore.location", "string", None, "The broker's keystore file (PKCS12, or PEM: key and chain)."),
    _broker("ssl.keystore.password", "password", None, "Password of the keystore file.", sensitive=True),
    _broker("ssl.key.password", "password", None, "Password of the private key (PEM: of the encrypted key).",
            sensitive=True),
    _broker("ssl.keystore.certificate.chain", "password", None,
            "PEM certificate chain given inline (with ssl.keystore.type=PEM).", sensitive=True),
    _broker("ssl.keystore.key", "password", None, "PEM private key given inline (with ssl.keystore.type=PEM).",
            sensitive=True),
    _broker("ssl.truststore.type", "string", "JKS", "PEM or PKCS12: the CAs client certificates are checked against."),
    _broker("ssl.truststore.location", "string", None, "The truststore file (PEM or PKCS12)."),
    _broker("ssl.truststore.password", "password", None, "Password of the truststore file.", sensitive=True),
    _broker("ssl.truststore.certificates", "password", None, "Trusted CA certificates given inline, PEM.",
            sensitive=True),
    _broker("ssl.client.auth", "string", "none",
            "none, requested or required: whether clients are asked for a certificate (mTLS).",
            ValidString("none", "requested", "required")),
    _broker("ssl.principal.mapping.rules", "string", "DEFAULT",
            "Rules mapping a client certificate's DN to the principal's name (RULE:pattern/replacement/[LU], "
            "DEFAULT)."),
    _broker("ssl.enabled.protocols", "list", ["TLSv1.2", "TLSv1.3"], "TLS versions served."),
    _broker("ssl.protocol", "string", "TLSv1.3", "The newest TLS version to offer." + _no_effect(
        "the enabled protocols decide; OpenSSL negotiates the newest of them")),
    _broker("ssl.cipher.suites", "list", [],
            "TLS 1.2 cipher suites (IANA names as Kafka's, or OpenSSL names); empty means OpenSSL's defaults. "
            "TLS 1.3 suites cannot be restricted here."),
    _broker("ssl.endpoint.identification.algorithm", "string", "https",
            "Host name check of the peer's certificate." + _no_effect("a single broker opens no TLS connection "
                                                                     "of its own; clients check the broker's")),
    _broker("socket.request.max.bytes", "int", 100 * 1024 * 1024,
            "Largest request frame; a bigger size prefix closes the connection before the body is read.",
            AtLeast(1)),
    # Kafka's default is 100 KiB for both; here the kernel's autotuning unless asked, as fixed
    # 100 KiB buffers cost 7-25% of the throughput rows (docs/differences.md#socket-buffers-default)
    _broker("socket.send.buffer.bytes", "int", -1,
            "SO_SNDBUF of accepted sockets; -1 = the OS sizes it (Kafka's default is 102400)."),
    _broker("socket.receive.buffer.bytes", "int", -1,
            "SO_RCVBUF of the listening socket, which accepted sockets inherit; -1 = the OS sizes it "
            "(Kafka's default is 102400)."),
    _broker("socket.listen.backlog.size", "int", 50, "Listen backlog of the server socket (KIP-764): connections the OS completes before the broker accepts them.", AtLeast(1)),
    _broker("queued.max.requests", "int", 500,
            "Requests read but not yet handled, per connection, before the broker stops reading from that connection "
            "(Kafka counts them broker-wide).", AtLeast(1)),
    _broker("queued.max.request.bytes", "long", 100 * 1024 * 1024,
            "Bytes of requests being read or queued, all connections together, plus response bytes waiting for "
            "slow readers (minibroker.network.memory_pool). A connection whose next request does not fit stops being read "
            "until memory frees (back-pressure); a request is admitted whenever any memory is free, so one up to "
            "socket.request.max.bytes always gets in and at most about this plus socket.request.max.bytes is held. "
            "-1 = no bound. Dev default 100 MiB (Kafka: -1): unbounded, 240 connections each sending a 100 MB "
            "request take 24 GiB and the broker is killed; 100 MiB keeps a dev broker small next to everything "
            "else and still admits any request the broker accepts."),
    _broker("socket.request.read.timeout.ms", "long", 30_000,
            "minibroker's own key: a request whose bytes keep arriving for longer than this without completing "
            "(a slowloris client) is dropped and its connection closed with a log line; the clock stops while "
            "the broker itself is not reading the connection. Kafka has no such bound. -1 = no bound.",
            AtLeast(-1)),
    _broker("connections.max.idle.ms", "long", 10 * 60 * 1000, "A connection that has read and written nothing for this long, and is not handling a request, is "
            "closed (checked every half of it, at most every 10 s); negative never closes one."),
    _broker("max.connections", "int", INT_MAX,
            "Most connections the broker holds at once; one more is closed as soon as accepted, with a log line "
            "(Kafka's acceptor instead waits for a slot).", AtLeast(0), dynamic=True),
    _broker("max.connections.per.ip", "int", INT_MAX,
            "Most connections from one address; one more is closed as soon as accepted, with a log line.",
            AtLeast(0), dynamic=True),
    _broker("max.connections.per.ip.overrides", "string", "",
            "Per-address exceptions to max.connections.per.ip: comma-separated address:count.", dynamic=True),
    _broker("max.connection.creation.rate", "int", INT_MAX,
            "Most new connections per second the broker accepts, measured over quota.window.num windows of "
            "quota.window.size.seconds; above it the listener stops accepting for the throttle time (the "
            "connections wait in the listen backlog), as Kafka's acceptor does.", AtLeast(0), dynamic=True),
    _broker("quota.window.num", "int", 11,
            "Samples kept for client quota rates (Kafka: the metric's sample count).", AtLeast(1)),
    _broker("quota.window.size.seconds", "int", 1, "Length of one client quota sample, in seconds.", AtLeast(1)),
    _broker("num.network.threads", "int", 3,
            "Kafka's socket thread count." + _UNUSED, AtLeast(1)),
    _broker("num.io.threads", "int", 8,
            "Kafka's request-handler thread count." + _UNUSED, AtLeast(1),
            dynamic=True),
    # --- log storage
    _broker("log.dirs", "string", None, "Comma-separated directories holding the partitions; overrides log.dir. The first also "
            "holds the broker's own files; a new partition goes to the one holding the fewest."),
    _broker("log.dir", "string", "data",
            "Directory holding the partitions when log.dirs is unset. Dev default 'data' under the working "
            "directory (Kafka: /tmp/kafka-logs), which git ignores."),
    _broker("num.partitions", "int", 1, "Partitions of a topic created without a count (auto-created topics too).",
            AtLeast(1)),
    _broker("default.replication.factor", "int", 1,
            "Replication factor of auto-created topics. A single node can only host 1."),
    _broker("auto.create.topics.enable", "boolean", True,
            "Create a topic when a client asks Metadata (or produces) for one that does not exist."),
    _broker("delete.topic.enable", "boolean", True, "Whether DeleteTopics may delete topics."),
    _broker("log.segment.bytes", "int", 1024 * 1024 * 1024, "Broker default of segment.bytes.",
            AtLeast(_MIN_SEGMENT_BYTES), dynamic=True),
    _broker("log.roll.ms", "long", None, "Broker default of segment.ms; unset means log.roll.hours.", dynamic=True),
    _broker("log.roll.hours", "int", 168, "Broker default of segment.ms, in hours, when log.roll.ms is unset.",
            AtLeast(1)),
    _broker("log.roll.jitter.ms", "long", None, "Broker default of segment.jitter.ms; unset means log.roll.jitter.hours.",
            dynamic=True),
    _broker("log.roll.jitter.hours", "int", 0, "Broker default of segment.jitter.ms, in hours.", AtLeast(0)),
    _broker("log.retention.ms", "long", None,
            "Broker default of retention.ms; unset means log.retention.minutes, then log.retention.hours.",
            dynamic=True),
    _broker("log.retention.minutes", "int", None,
            "Broker default of retention.ms in minutes, used when log.retention.ms is unset."),
    _broker("log.retention.hours", "int", 168,
            "Broker default of retention.ms in hours, used when log.retention.ms and log.retention.minutes are unset."),
    _broker("log.retention.bytes", "long", -1, "Broker default of retention.bytes.", dynamic=True),
    _broker("log.retention.check.interval.ms", "long", 5 * 60 * 1000,
            "How often the background task looks for segments past retention.", AtLeast(1)),
    _broker("log.cleanup.policy", "list", ["delete"], "Broker default of cleanup.policy.",
            ValidList(*_CLEANUP_POLICIES), dynamic=True),
    _broker("log.index.size.max.bytes", "int", 10 * 1024 * 1024, "Broker default of segment.index.bytes.",
            AtLeast(4), dynamic=True),
    _broker("log.index.interval.bytes", "int", 4096, "Broker default of index.interval.bytes.", AtLeast(0),
            dynamic=True),
    _broker("log.flush.interval.messages", "long", LONG_MAX, "Broker default of flush.messages.", AtLeast(1),
            dynamic=True),
    _broker("log.flush.interval.ms", "long", None,
            "Broker default of flush.ms; unset means log.flush.scheduler.interval.ms.", dynamic=True),
    _broker("log.flush.scheduler.interval.ms", "long", LONG_MAX,
            "How often the flusher checks whether a partition is due for flush.ms; also flush.ms's last fallback. "
            "The default (Long.MAX_VALUE) means never."),
    _broker("log.flush.offset.checkpoint.interval.ms", "int", 60000,
            "How often recovery points are written to recovery-point-offset-checkpoint.", AtLeast(0)),
    _broker("log.flush.start.offset.checkpoint.interval.ms", "int", 60000,
            "How often log start offsets are written to log-start-offset-checkpoint."
            + _no_effect("it is written with the recovery points, every log.flush.offset.checkpoint.interval.ms"), AtLeast(0)),
    _broker("log.segment.delete.delay.ms", "long", 60000, "Broker default of file.delete.delay.ms.", AtLeast(0),
            dynamic=True),
    _broker("log.preallocate", "boolean", False, "Broker default of preallocate." + _no_effect("segment files grow as they are written"), dynamic=True),
    _broker("log.message.format.version", "string", "3.0-IV1",
            "Broker default of message.format.version (deprecated in Kafka; honoured here).",
            MetadataVersionValidator()),
    _broker("log.message.timestamp.type", "string", "CreateTime", "Broker default of message.timestamp.type.",
            ValidString(*_TIMESTAMP_TYPES), dynamic=True),
    _broker("log.message.timestamp.difference.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.difference.max.ms (deprecated).", AtLeast(0), dynamic=True),
    _broker("log.message.timestamp.before.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.before.max.ms.", AtLeast(0), dynamic=True),
    _broker("log.message.timestamp.after.max.ms", "long", LONG_MAX,
            "Broker default of message.timestamp.after.max.ms.", AtLeast(0), dynamic=True),
    _broker("log.message.downconversion.enable", "boolean", True,
            "Broker default of message.downconversion.enable.", dynamic=True),
    _broker("log.local.retention.ms", "long", -2, "Broker default of local.retention.ms." + _NO_TIERED,
            AtLeast(-2), dynamic=True),
    _broker("log.local.retention.bytes", "long", -2, "Broker default of local.retention.bytes." + _NO_TIERED,
            AtLeast(-2), dynamic=True),
    _broker("num.recovery.threads.per.data.dir", "int", 1,
            "Kafka's log recovery thread count per directory." + _UNUSED, AtLeast(1), dynamic=True),
    # --- compaction
    _broker("log.cleaner.enable", "boolean", True,
            "Run the log cleaner, which compacts topics with cleanup.policy=compact (__consumer_offsets is one)."),
    _broker("log.cleaner.min.cleanable.ratio", "double", 0.5, "Broker default of min.cleanable.dirty.ratio.",
            Between(0, 1), dynamic=True),
    _broker("log.cleaner.delete.retention.ms", "long", 24 * 3600 * 1000, "Broker default of delete.retention.ms.",
            AtLeast(0), dynamic=True),
    _broker("log.cleaner.min.compaction.lag.ms", "long", 0, "Broker default of min.compaction.lag.ms.",
            AtLeast(0), dynamic=True),
    _broker("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, "Broker default of max.compaction.lag.ms.",
            AtLeast(1), dynamic=True),
    _broker("log.cleaner.backoff.ms", "long", 15000, "Pause of the cleaner when no log needs cleaning.", AtLeast(0),
            dynamic=True),
    _broker("log.cleaner.threads", "int", 1, "Cleaner threads in Kafka." + _no_effect("minibroker runs one cleaner task"),
            AtLeast(0), dynamic=True),
    # --- records
    _broker("message.max.bytes", "int", _DEFAULT_MAX_MESSAGE_BYTES, "Broker default of max.message.bytes.",
            AtLeast(0), dynamic=True),
    _broker("compression.type", "string", "producer", "Broker default of compression.type.",
            ValidString(*_COMPRESSION_TYPES), dynamic=True),
    _broker("compression.gzip.level", "int", -1, "Broker default of compression.gzip.level." + _no_effect("recompression uses each codec's default level"), GzipLevel(),
            dynamic=True),
    _broker("compression.lz4.level", "int", 9, "Broker default of compression.lz4.level." + _no_effect("recompression uses each codec's default level"), Between(1, 17),
            dynamic=True),
    _broker("compression.zstd.level", "int", 3, "Broker default of compression.zstd.level." + _no_effect("recompression uses each codec's default level"), Between(-131072, 22),
            dynamic=True),
    # --- replication (one node: the broker is leader and whole ISR of everything)
    _broker("min.insync.replicas", "int", 1, "Broker default of min.insync.replicas.", AtLeast(1), dynamic=True),
    _broker("unclean.leader.election.enable", "boolean", False,
            "Broker default of unclean.leader.election.enable." + _NOT_HERE, dynamic=True),
    _broker("auto.leader.rebalance.enable", "boolean", True,
            "Whether the controller moves each partition's leadership back to its preferred replica (the "
            "first of its replicas) when that one is in the ISR again, every "
            "leader.imbalance.check.interval.seconds."),
    _broker("leader.imbalance.check.interval.seconds", "long", 300,
            "How often the controller checks for partitions not led by their preferred replica.", AtLeast(1)),
    _broker("leader.imbalance.per.broker.percentage", "int", 10,
            "The imbalance ratio of the ZooKeeper controller." + _no_effect(
                "as on Kafka's KRaft controller, every imbalanced partition is rebalanced"), AtLeast(0)),
    _broker("replica.lag.time.max.ms", "long", 30000,
            "How long a follower may go without catching up to the leader's log end offset before the "
            "leader proposes to drop it from the ISR (checked every half of it)."),
    # --- fetch
    _broker("fetch.max.bytes", "int", 55 * 1024 * 1024, "Upper bound on the bytes one Fetch response returns."
            + _no_effect("a Fetch is bounded by its own max_bytes and partition_max_bytes"),
            AtLeast(1024)),
    _broker("max.incremental.fetch.session.cache.slots", "int", 1000,
            "Incremental fetch sessions (KIP-227) kept at once; 0 disables them.", AtLeast(0)),
    # --- group coordinator
    _broker("offsets.topic.num.partitions", "int", 50,
            "Partitions of __consumer_offsets; fixed once the topic exists.", AtLeast(1)),
    _broker("offsets.topic.replication.factor", "short", 1,
            "Replication factor of __consumer_offsets." + _ONE_REPLICA.format(k=3), AtLeast(1)),
    _broker("offsets.topic.segment.bytes", "int", 100 * 1024 * 1024,
            "segment.bytes of __consumer_offsets, kept small so compaction and loading stay fast.", AtLeast(1)),
    _broker("offsets.retention.minutes", "int", 7 * 24 * 60,
            "Committed offsets of a group with no members are dropped after this long.", AtLeast(1)),
    _broker("offsets.retention.check.interval.ms", "long", 600000,
            "How often expired committed offsets are looked for.", AtLeast(1)),
    _broker("offsets.commit.timeout.ms", "int", 5000,
            "How long an offset commit may wait for its write before failing."
            + _no_effect("a commit is appended locally and never waits for replicas"), AtLeast(1)),
    _broker("offset.metadata.max.bytes", "int", 4096,
            "Longest metadata string an offset commit may carry (else OFFSET_METADATA_TOO_LARGE)."),
    _broker("group.initial.rebalance.delay.ms", "int", 0,
            "How long the first rebalance of an empty group waits for more members to join. Dev default 0 "
            "(Kafka: 3000): a single-consumer dev loop should not wait 3 s per start; Kafka's own sample "
            "config uses 0 for development too."),
    _broker("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout a classic group member may ask for."),
    _broker("group.max.session.timeout.ms", "int", 1800000, "Largest session timeout a classic group member may ask for."),
    _broker("group.max.size", "int", INT_MAX, "Most members one consumer group may have.", AtLeast(1)),
    # --- KIP-848 consumer groups
    _broker("group.consumer.session.timeout.ms", "int", 45000,
            "Session timeout of a consumer-protocol member (KIP-848): fenced without a heartbeat this long.",
            AtLeast(1)),
    _broker("group.consumer.heartbeat.interval.ms", "int", 5000,
            "Heartbeat interval told to consumer-protocol members (KIP-848).", AtLeast(1)),
    _broker("group.consumer.min.session.timeout.ms", "int", 45000,
            "Smallest consumer.session.timeout.ms a consumer group's GROUP config may set.", AtLeast(1)),
    _broker("group.consumer.max.session.timeout.ms", "int", 60000,
            "Largest consumer.session.timeout.ms a consumer group's GROUP config may set.", AtLeast(1)),
    _broker("group.consumer.min.heartbeat.interval.ms", "int", 5000,
            "Smallest consumer.heartbeat.interval.ms a consumer group's GROUP config may set.", AtLeast(1)),
    _broker("group.consumer.max.heartbeat.interval.ms", "int", 15000,
            "Largest consumer.heartbeat.interval.ms a consumer group's GROUP config may set.", AtLeast(1)),
    _broker("group.consumer.assignment.interval.ms", "int", 1000,
            "Accepted, no effect here: Kafka batches target-assignment computations this far apart; this "
            "broker computes a group's target assignment at once, in the heartbeat that bumps its epoch.",
            AtLeast(0), dynamic=True),  # dynamic in Kafka 4.4 (AlterConfigs on a BROKER resource)
    _broker("group.consumer.min.assignment.interval.ms", "int", 0,
            "Smallest consumer.assignment.interval.ms a GROUP config may set (checked, as in Kafka).",
            AtLeast(0)),
    _broker("group.consumer.max.assignment.interval.ms", "int", 15000,
            "Largest consumer.assignment.interval.ms a GROUP config may set (checked, as in Kafka).",
            AtLeast(0)),
    _broker("group.consumer.assignors", "list", ["uniform", "range"],
            "Server-side assignors of consumer groups, the first being the default (short names or Kafka's "
            "class names of UniformAssignor and RangeAssignor)."),
    _broker("group.consumer.max.size", "int", INT_MAX, "Most members one consumer group may have.", AtLeast(1)),
    _broker("group.consumer.migration.policy", "string", "bidirectional",
            "Online migration of a group with members between the classic and consumer protocols: disabled, "
            "upgrade, downgrade or bidirectional (case-insensitive).",
            ValidString("disabled", "upgrade", "downgrade", "bidirectional", "DISABLED", "UPGRADE", "DOWNGRADE",
                        "BIDIRECTIONAL")),
    # --- transactions and idempotence
    _broker("transaction.state.log.num.partitions", "int", 50,
            "Partitions of __transaction_state; fixed once the topic exists.", AtLeast(1)),
    _broker("transaction.state.log.replication.factor", "short", 1,
            "Replication factor of __transaction_state." + _ONE_REPLICA.format(k=3), AtLeast(1)),
    _broker("transaction.state.log.min.isr", "int", 1,
            "min.insync.replicas of __transaction_state." + _ONE_REPLICA.format(k=2), AtLeast(1)),
    _broker("transaction.state.log.segment.bytes", "int", 100 * 1024 * 1024,
            "segment.bytes of __transaction_state.", AtLeast(1)),
    _broker("transactional.id.expiration.ms", "int", 7 * 24 * 3600 * 1000,
            "A transactional id with no transaction activity for this long is expired.", AtLeast(1)),
    _broker("transaction.max.timeout.ms", "int", 15 * 60 * 1000,
            "Largest transaction timeout InitProducerId accepts (else INVALID_TRANSACTION_TIMEOUT).", AtLeast(1)),
    _broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000,
            "How often transactions past their timeout are looked for and aborted.", AtLeast(1)),
    _broker("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600 * 1000,
            "How often expired transactional ids are removed.", AtLeast(1)),
    _broker("producer.id.expiration.ms", "int", 24 * 3600 * 1000,
            "A producer id with no writes to a partition for this long is forgotten there (its sequence state "
            "is dropped).", AtLeast(1), dynamic=True),
    _broker("producer.id.expiration.check.interval.ms", "int", 600000,
            "How often expired producer ids are removed.", AtLeast(1)),
    # --- the web console and /metrics (minibroker.console; not Kafka keys, Kafka has no console)
    _broker("console.port", "int", -1,
            "Port of the web console and /metrics (--console-port); -1 = off, 0 = any free port.", AtLeast(-1)),
    _broker("console.host", "string", "127.0.0.1",
            "Address the web console listens on; loopback unless asked, as it has no authentication."),
    _broker("console.allow.writes", "boolean", False,
            "Let the console create and delete topics, produce a test record and reset a group's offsets "
            "(--console-allow-writes), through the same code paths as the protocol APIs."),
    _broker("console.allow.faults", "boolean", False,
            "Serve /api/faults on the console: set and remove faults (errors, delays, closed connections, a full "
            "disk, a paused broker) over HTTP, for integration tests (--console-allow-faults; docs/testing.md)."),
    # --- the schema registry (minibroker.schema_registry; Confluent's REST API, not a Kafka key: Confluent
    # configures its registry with `listeners=http://host:8081`, Karapace with `host` and `port`)
    _broker("schema.registry.port", "int", -1,
            "Port of the built-in schema registry, Confluent's REST API over the _schemas topic "
            "(--schema-registry-port; Confluent's default is 8081); -1 = off, 0 = any free port.", AtLeast(-1)),
    _broker("schema.registry.host", "string", "127.0.0.1",
            "Address the schema registry listens on (--schema-registry-host); loopback unless asked, as it "
            "has no authentication."),
]

# --- share groups (KIP-932; Kafka's ShareGroupConfig / ShareCoordinatorConfig)
_BROKER_KEYS += [
    _broker("group.share.enable", "boolean", True,
            "Serve share groups (KIP-932): ShareGroupHeartbeat/Describe, ShareFetch, ShareAcknowledge. "
            "Kafka 4.4 gates them with the share.version feature, on by default since 4.2."),
    _broker("group.share.record.lock.duration.ms", "int", 30000,
            "How long a share consumer holds acquired records before they return to the others.",
            Between(1000, 3600000)),
    _broker("group.share.min.record.lock.duration.ms", "int", 15000,
            "Smallest share.record.lock.duration.ms a share group may set.", Between(1000, 30000)),
    _broker("group.share.max.record.lock.duration.ms", "int", 60000,
            "Largest share.record.lock.duration.ms a share group may set.", Between(30000, 3600000)),
    _broker("group.share.delivery.count.limit", "int", 5,
            "Deliveries of a record before a release or a lock timeout archives it.", Between(2, 10)),
    _broker("group.share.partition.max.record.locks", "int", 2000,
            "Most records of one share partition in flight (acquired or released, not yet done).",
            Between(100, 10000)),
    _broker("group.share.session.timeout.ms", "int", 45000,
            "A share-group member that does not heartbeat within this leaves the group.", AtLeast(1)),
    _broker("group.share.heartbeat.interval.ms", "int", 5000,
            "Heartbeat interval given to share-group members.", AtLeast(1)),
    _broker("group.share.max.size", "int", 200, "Most members one share group may have.", Between(1, 1000)),
    _broker("group.share.assignment.interval.ms", "int", 1000,
            "Least time between two target assignments of a share group (KIP-1263): membership changes "
            "within it are assigned together.", AtLeast(0), dynamic=True),
    _broker("errors.deadletterqueue.auto.create.topics.enable", "boolean", False,
            "Create a share group's dead-letter queue topic (KIP-1191) when it does not exist, with the "
            "broker's defaults and errors.deadletterqueue.group.enable=true.", dynamic=True),
    _broker("errors.deadletterqueue.topic.name.prefix", "string", "dlq.",
            "The prefix every share group's dead-letter queue topic name must have (\"\": any name).",
            dynamic=True),
    _broker("share.coordinator.state.topic.num.partitions", "int", 50,
            "Partitions of __share_group_state; fixed once the topic exists.", AtLeast(1)),
    _broker("share.coordinator.state.topic.replication.factor", "short", 1,
            "Replication factor of __share_group_state." + _ONE_REPLICA.format(k=3), AtLeast(1)),
    _broker("share.coordinator.state.topic.min.isr", "short", 1,
            "min.insync.replicas of __share_group_state." + _ONE_REPLICA.format(k=2), AtLeast(1)),
    _broker("share.coordinator.state.topic.segment.bytes", "int", 100 * 1024 * 1024,
            "segment.bytes of __share_group_state.", AtLeast(1)),
]


# --- KRaft (issue 29; Kafka's KRaftConfigs, QuorumConfig, ServerLogConfigs): unset process.roles keeps
# the node what it always was, a combined broker+controller cluster of one with no controller listener
_BROKER_KEYS += [
    _broker("process.roles", "list", [],
            "broker, controller, or both: the roles of this node in a KRaft cluster (minibroker.kafka_raft_server). "
            "Empty (minibroker's default; Kafka requires it): a single node that is its own controller."),
    _broker("controller.quorum.voters", "list", [],
            "The controller quorum as id@host:port; minibroker's controller is a single voter."),
    _broker("controller.quorum.bootstrap.servers", "list", [],
            "host:port of the controllers (KIP-853), the alternative to controller.quorum.voters."),
    _broker("controller.listener.names", "list", [],
            "The listeners the controller serves on (in listeners on a controller, only named on a broker)."),
    _broker("broker.session.timeout.ms", "int", 9000,
            "A broker whose heartbeats stop for this long is fenced by the controller.", AtLeast(1)),
    _broker("broker.heartbeat.interval.ms", "int", 2000, "Between a broker's heartbeats to the controller.",
            AtLeast(1)),
    _broker("metadata.max.idle.interval.ms", "int", 500,
            "The controller appends a NoOpRecord when the metadata log was idle this long (0: never).", AtLeast(0)),
    _broker("metadata.log.max.record.bytes.between.snapshots", "long", 20 * 1024 * 1024,
            "Metadata record bytes after which the controller writes a snapshot.", AtLeast(1)),
    _broker("metadata.log.max.snapshot.interval.ms", "long", 3600000,
            "Time after which the controller writes a snapshot of new metadata (0: only by size).", AtLeast(0)),
    _broker("metadata.log.segment.bytes", "int", 1024 * 1024 * 1024, "segment.bytes of __cluster_metadata.",
            AtLeast(12)),
    _broker("metadata.log.segment.ms", "long", 604800000, "segment.ms of __cluster_metadata.", AtLeast(1)),
    _broker("metadata.max.retention.bytes", "long", 100 * 1024 * 1024,
            "Past this size, __cluster_metadata segments before the latest snapshot are deleted (-1: no limit)."),
    _broker("metadata.max.retention.ms", "long", 604800000,
            "Past this age, __cluster_metadata segments before the latest snapshot are deleted (-1: no limit)."),
]


# --- KIP-1071 streams groups (issue 35; Kafka's GroupCoordinatorConfig group.streams.*)
_BROKER_KEYS += [
    _broker("group.streams.session.timeout.ms", "int", 45000,
            "A streams-group member that does not heartbeat within this leaves the group.", AtLeast(1)),
    _broker("group.streams.heartbeat.interval.ms", "int", 5000,
            "Heartbeat interval given to streams-group members.", AtLeast(1)),
    _broker("group.streams.num.standby.replicas", "int", 0,
            "Standby replicas of each stateful task a streams group gets (the group config "
            "streams.num.standby.replicas overrides it).", AtLeast(0)),
    # the bounds of the streams.* GROUP configs (coordinator/group/streams_group_configs.py)
    _broker("group.streams.min.session.timeout.ms", "int", 45000,
            "Smallest streams.session.timeout.ms a streams group's GROUP config may set.", AtLeast(1)),
    _broker("group.streams.max.session.timeout.ms", "int", 60000,
            "Largest streams.session.timeout.ms a streams group's GROUP config may set.", AtLeast(1)),
    _broker("group.streams.min.heartbeat.interval.ms", "int", 5000,
            "Smallest streams.heartbeat.interval.ms a streams group's GROUP config may set.", AtLeast(1)),
    _broker("group.streams.max.heartbeat.interval.ms", "int", 15000,
            "Largest streams.heartbeat.interval.ms a streams group's GROUP config may set.", AtLeast(1)),
    _broker("group.streams.max.standby.replicas", "int", 2,
            "Most streams.num.standby.replicas a streams group's GROUP config may set.", AtLeast(0)),
    _broker("group.streams.initial.rebalance.delay.ms", "int", 3000,
            "Delay of a new streams group's first assignment (the group config "
            "streams.initial.rebalance.delay.ms overrides it).", AtLeast(0)),
    _broker("group.streams.assignment.interval.ms", "int", 1000,
            "Shown as Kafka's streams.assignment.interval.ms default; targets are computed at once here.", AtLeast(0),
            dynamic=True),  # a dynamic broker key in Kafka 4.4 (DynamicGroupConfig)
    _broker("group.streams.min.assignment.interval.ms", "int", 0,
            "Smallest streams.assignment.interval.ms a streams group's GROUP config may set.", AtLeast(0)),
    _broker("group.streams.max.assignment.interval.ms", "int", 15000,
            "Largest streams.assignment.interval.ms a streams group's GROUP config may set.", AtLeast(0)),
    _broker("group.streams.assignors", "list", ["sticky"],
            "The streams task assignors by short name (minibroker has Kafka's sticky one only)."),
    _broker("group.streams.rack.aware.assignment.tags", "list", [],
            "Shown as Kafka's streams.rack.aware.assignment.tags default; without effect here."),
    _broker("group.streams.assignor.offload.enable", "boolean", True,
            "Shown as Kafka's streams.assignor.offload.enable default; without effect here."),
    _broker("group.streams.task.offset.interval.ms", "int", 60000,
            "Default of streams.task.offset.interval.ms, told to streams members in each heartbeat answer.", AtLeast(1)),
    _broker("group.streams.min.task.offset.interval.ms", "int", 15000,
            "Smallest streams.task.offset.interval.ms a streams group's GROUP config may set.", AtLeast(1)),
    _broker("group.streams.num.warmup.replicas", "int", 2,
            "Default of streams.num.warmup.replicas; without effect, as on Kafka 4.4 (no warm-up tasks).", AtLeast(0)),
    _broker("group.streams.max.warmup.replicas", "int", 20,
            "Most streams.num.warmup.replicas a streams group's GROUP config may set.", AtLeast(0)),
    _broker("group.streams.acceptable.recovery.lag", "long", 10000,
            "Default of streams.acceptable.recovery.lag, told to streams members in each heartbeat answer.", AtLeast(0)),
]


# --- delegation tokens (KIP-48; Kafka's DelegationTokenManagerConfigs)
_BROKER_KEYS += [
    _broker("delegation.token.secret.key", "password", None,
            "Secret the HMAC of a delegation token is made with (HMAC-SHA512 of the token id); unset: tokens "
            "are off (DELEGATION_TOKEN_AUTH_DISABLED). Every broker of a cluster needs the same.", sensitive=True),
    _broker("delegation.token.master.key", "password", None,
            "Deprecated alias of delegation.token.secret.key, read when that is unset.", sensitive=True),
    _broker("delegation.token.max.lifetime.ms", "long", 7 * 24 * 3600 * 1000,
            "Longest a delegation token lives, renewals included.", AtLeast(1)),
    _broker("delegation.token.expiry.time.ms", "long", 24 * 3600 * 1000,
            "How long a new or renewed delegation token lives unless renewed (a renewal asks for at most this).",
            AtLeast(1)),
    _broker("delegation.token.expiry.check.interval.ms", "long", 3600 * 1000,
            "Between two removals of the expired delegation tokens.", AtLeast(1)),
]


def _kafka_dynamic_keys(modelled: set[str]) -> list[ConfigKey]:
    """Kafka 4.4's dynamic broker keys that minibroker does not model (config/kafka_dynamic.py):
    accepted by AlterConfigs, kept and described, acting on nothing."""
    out = []
    for name, kind, default, sensitive in KAFKA_DYNAMIC_BROKER_KEYS:
        if name in modelled:
            continue
        key = _broker(name, kind, None, f"Kafka's {name}." + _no_effect(
            "a dynamic Kafka broker key minibroker does not model; the value is stored and described"),
            dynamic=True, sensitive=sensitive)
        out.append(dataclasses.replace(key, default=parse_value(key, default)))
    return out


_ACCEPTED = _kafka_dynamic_keys({k.name for k in _BROKER_KEYS})
_BROKER_KEYS += _ACCEPTED
# Kafka's dynamic broker keys only stored and described here (config/kafka_dynamic.py)
KAFKA_KEYS_WITHOUT_EFFECT = frozenset(k.name for k in _ACCEPTED)

TOPIC_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in _TOPIC_KEYS}
BROKER_CONFIGS: dict[str, ConfigKey] = {k.name: k for k in _BROKER_KEYS}
# Kafka 4.4 defines these as internal (ConfigDef.defineInternal in GroupCoordinatorConfig): read
# and validated, never described; ours likewise (minibroker.config.describe)
UNDESCRIBED_BROKER_KEYS = frozenset({
    "group.streams.assignor.offload.enable", "group.streams.task.offset.interval.ms",
    "group.streams.min.task.offset.interval.ms", "group.streams.num.warmup.replicas",
    "group.streams.max.warmup.replicas", "group.streams.acceptable.recovery.lag"})

# Broker synonyms given in a coarser unit (Kafka's ConfigSynonym converters).
_SYNONYM_SCALE = {
    "log.roll.hours": 3600 * 1000,
    "log.roll.jitter.hours": 3600 * 1000,
    "log.retention.minutes": 60 * 1000,
    "log.retention.hours": 3600 * 1000,
}

# DynamicBrokerConfig.brokerConfigSynonyms: broker keys that describe one setting in several units.
_BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_BROKER_SYNONYMS = {name: group for group in _BROKER_SYNONYM_GROUPS for name in group}
