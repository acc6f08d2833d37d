"""The network layer: sockets in, request frames to the dispatcher, responses out (Kafka:
SocketServer, Selector, KafkaChannel, the transport layers; our code).

    socket_server.py      SocketServer: bind the listeners, accept (connection quotas), the idle
                          and slow-request sweeps, graceful stop
    processor.py          Connection: one client connection; requests one at a time, answered in
                          order; back-pressure and quota muting
    request_reader.py     RequestReader: size-prefixed frames, capped, charged to the memory pool
    transport.py          Transport: plain TCP, send and sendfile, TCP_CORK
    tls_transport.py      TlsTransport: TLS through an ssl.SSLObject (loaded for TLS listeners only)
    channel.py            Channel: the one contract the dispatcher, handlers and SASL use
    memory_pool.py        MemoryPool: queued.max.request.bytes
    connection_quotas.py  ConnectionQuotas: max.connections(.per.ip), connection creation rates

Nothing here knows the Kafka protocol beyond the 4-byte size prefix: what a frame means is the
dispatcher's business (minibroker.kafka_apis).
"""

from minibroker_protocol.compiled import extend_path

# the compiled twins of the hot modules first, when built and current (minibroker_protocol.compiled)
__path__ = extend_path(__path__, __name__)
