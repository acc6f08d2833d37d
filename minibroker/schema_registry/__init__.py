"""A schema registry built into the broker, speaking Confluent's REST API (issue 36).

Theory of operation. Producers and consumers that use Confluent's serializers (Avro, JSON Schema,
Protobuf) register and fetch schemas over HTTP and frame each record as magic byte 0, a 4-byte
schema id, then the payload. This package serves that API on the broker's own event loop (aiohttp,
as the console: minibroker.console says why), off unless `schema.registry.port` /
`--schema-registry-port` asks for it, on loopback unless `schema.registry.host` says otherwise.

  app.py           SchemaRegistry: the HTTP server's life (BrokerServer starts and stops it)
  http_api.py      the routes of Confluent's API and its error bodies
  registry.py      the operations (register, look up, delete, compatibility, config, mode)
  state.py         subjects, versions, ids, configs and modes: the replay of _schemas
  schema_log.py    the _schemas topic in Confluent's record format, written through the ReplicaManager
  compatibility.py the seven levels
  schemas.py, schema_types.py, avro_schema.py, json_schema.py, protobuf_schema.py: the three types
  validation.py    the broker-side check of produced records (confluent.value.schema.validation)

The state lives in the `_schemas` topic as Confluent's registry and Karapace keep it, so either
could take the topic over; on one node this broker leads its one partition.
"""

from minibroker.schema_registry.app import SchemaRegistry

__all__ = ["SchemaRegistry"]
