"""`Channel`: what everything above the socket may do with a client connection (Kafka: KafkaChannel).

One contract for the three that use a connection: the dispatcher (minibroker.kafka_apis), the
handlers (through `RequestContext.connection`, minibroker.handlers.registry) and the SASL exchange
(minibroker.security.sasl). minibroker.network.processor.Connection implements it; tests may hand
in any object with these members.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:  # kept out of what minibroker.cli imports before binding the listeners
    from minibroker_protocol.codec import Chunk
    from minibroker_protocol.headers import RequestHeader

Answer: TypeAlias = "list[Chunk] | None"  # a response's chunks, or None for no response


class Authenticator(Protocol):
    """A connection's authentication exchange as the dispatcher consults it (Kafka: the network
    package's Authenticator; minibroker.security.sasl.SaslAuthenticator is the one we have). Each
    hook returns the exchange's own answer to await, or None to let the request through."""

    @property
    def authenticated(self) -> bool: ...

    @property
    def max_receive_size(self) -> int:
        """The largest frame accepted before authentication (`sasl.server.max.receive.size`): the
        connection refuses a bigger size prefix before reading the body."""
        ...

    def before_header(self, conn: Channel, frame: bytes | bytearray) -> Awaitable[Answer] | None:
        """Before the request header is read (frames that are not requests, or refused unread)."""
        ...

    def unreadable_header(self, conn: Channel) -> Answer:
        """The answer to a frame whose request header does not decode, before authentication."""
        ...

    def on_request(self, conn: Channel, header: RequestHeader, frame: bytes | bytearray,
                   pos: int) -> Awaitable[Answer] | None:
        """Once the header is decoded (`pos`: where the body starts)."""
        ...


class Channel(Protocol):
    peer: str  # "host:port" of the client, for log lines
    listener: str | None  # the name of the listener it was accepted on (None: the first)
    principal: str  # "User:<name>"; User:ANONYMOUS until TLS or SASL says who the client is
    ip: str  # the client's address, for ACL host matching and connection quotas

    @property
    def authenticator(self) -> Authenticator | None:
        """The SASL exchange of a SASL_* listener's connection (Kafka: KafkaChannel.authenticator),
        consulted by the dispatcher after its one header decode; None on other listeners."""
        ...

    def close(self, reason: str | None) -> None:
        """Close now; `reason` is logged (None: an ordinary close, nothing to log)."""
        ...

    def close_when_sent(self, reason: str) -> None:
        """Read nothing more and close once what is being answered has been sent (a failed
        login's response goes out before the close, as Kafka's)."""
        ...

    def add_close_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` once when the connection closes (at once if it is closed already); what
        lives as long as a connection does hangs off it (Kafka: ConnectionDisconnectListener)."""
        ...

    def mute(self, ms: int) -> None:
        """Read no request for `ms` (a quota's throttle time; KIP-219)."""
        ...
