"""DescribeDelegationToken (api key 41): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeDelegationTokenRequest', '1-3', flexible='2+',
    fields=[
        F('owners', '[]DescribeDelegationTokenOwner', '0+', nullable='0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeDelegationTokenResponse', '1-3', flexible='2+',
    fields=[
        F('error_code', 'int16', '0+'),
        F('tokens', '[]DescribedDelegationToken', '0+', fields=[
            F('principal_type', 'string', '0+'),
            F('principal_name', 'string', '0+'),
            F('token_requester_principal_type', 'string', '3+'),
            F('token_requester_principal_name', 'string', '3+'),
            F('issue_timestamp', 'int64', '0+'),
            F('expiry_timestamp', 'int64', '0+'),
            F('max_timestamp', 'int64', '0+'),
            F('token_id', 'string', '0+'),
            F('hmac', 'bytes', '0+'),
            F('renewers', '[]DescribedDelegationTokenRenewer', '0+', fields=[
                F('principal_type', 'string', '0+'),
                F('principal_name', 'string', '0+'),
            ]),
        ]),
        F('throttle_time_ms', 'int32', '0+'),
    ],
)

API = Api(41, 'DescribeDelegationToken', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi
