"""CreateDelegationToken (api key 38): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'CreateDelegationTokenRequest', '1-3', flexible='2+',
    fields=[
        F('owner_principal_type', 'string', '3+', nullable='3+'),
        F('owner_principal_name', 'string', '3+', nullable='3+'),
        F('renewers', '[]CreatableRenewers', '0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
        ]),
        F('max_lifetime_ms', 'int64', '0+'),
    ],
)

RESPONSE = Schema(
    'CreateDelegationTokenResponse', '1-3', flexible='2+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('principal_type', 'string', '0+'),
        F('principal_name', 'string', '0+'),
        F('token_requester_principal_type', 'string', '3+'),
        F('token_requester_principal_name', 'string', '3+'),
        F('issue_timestamp_ms', 'int64', '0+'),
        F('expiry_timestamp_ms', 'int64', '0+'),
        F('max_timestamp_ms', 'int64', '0+'),
        F('token_id', 'string', '0+'),
        F('hmac', 'bytes', '0+'),
        F('throttle_time_ms', 'int32', '0+'),
    ],
)

API = Api(38, 'CreateDelegationToken', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi
