"""Who may come in: SASL authentication on SASL_* listeners, the credentials it checks, and the
principal a connection acts as.

Theory of operation (Kafka: SaslServerAuthenticator, one per channel). The server gives every
connection on a SASL listener a `SaslAuthenticator` (`sasl.py`) that sits between the connection
and the broker's dispatcher. Until the client has authenticated it lets through ApiVersions and
SaslHandshake only, then SaslAuthenticate requests (or, after a v0 handshake, raw size-prefixed
tokens); anything else closes the connection, as Kafka's authenticator does. Mechanisms are small
sans-IO state machines: `plain.py` (RFC 4616, users from the listener's JAAS config) and
`scram.py` (RFC 5802/7677 with Kafka's extensions, credentials from `credentials.py`, stored
salted and iterated in the data directory, managed with Describe/AlterUserScramCredentials) and
`oauthbearer.py` (RFC 7628 with KIP-342 extensions; Kafka's unsecured JWS validator, or a Python
validator named by `sasl.server.callback.handler.python`; the token's expiry ends the session).
A failed login is answered after `connection.failed.authentication.delay.ms` and the connection
closed; a session lasts `connections.max.reauth.ms` (KIP-368) and the client re-authenticates on
the same connection before it ends. `settings.py` reads Kafka's keys (`sasl.enabled.mechanisms`,
`listener.name.<listener>.<mechanism>.sasl.jaas.config`, ...) once per listener.
"""
