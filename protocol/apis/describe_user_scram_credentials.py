"""DescribeUserScramCredentials (api key 50): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'DescribeUserScramCredentialsRequest', '0', flexible='0+',
    fields=[
        F('users', '[]UserName', '0+', nullable='0+', fields=[
            F('name', 'string', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'DescribeUserScramCredentialsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('error_code', 'int16', '0+'),
        F('error_message', 'string', '0+', nullable='0+'),
        F('results', '[]DescribeUserScramCredentialsResult', '0+', fields=[
            F('user', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
            F('credential_infos', '[]CredentialInfo', '0+', fields=[
                F('mechanism', 'int8', '0+'),
                F('iterations', 'int32', '0+'),
            ]),
        ]),
    ],
)

API = Api(50, 'DescribeUserScramCredentials', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi
