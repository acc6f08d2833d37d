"""The broker: network layer, dispatcher, ReplicaManager, metadata, coordinators, security (our code)."""

from minibroker_protocol.compiled import extend_path

# the compiled twins of the hot modules first, when built and current (minibroker_protocol.compiled)
__path__ = extend_path(__path__, __name__)
