"""AlterUserScramCredentials (api key 51): schema data generated from Kafka's message definitions
by tools/gen_schemas.py. Edit the generator, not this file."""

from minibroker_protocol.schema import Api, F, Schema, message_classes

REQUEST = Schema(
    'AlterUserScramCredentialsRequest', '0', flexible='0+',
    fields=[
        F('deletions', '[]ScramCredentialDeletion', '0+', fields=[
            F('name', 'string', '0+'),
            F('mechanism', 'int8', '0+'),
        ]),
        F('upsertions', '[]ScramCredentialUpsertion', '0+', fields=[
            F('name', 'string', '0+'),
            F('mechanism', 'int8', '0+'),
            F('iterations', 'int32', '0+'),
            F('salt', 'bytes', '0+'),
            F('salted_password', 'bytes', '0+'),
        ]),
    ],
)

RESPONSE = Schema(
    'AlterUserScramCredentialsResponse', '0', flexible='0+',
    fields=[
        F('throttle_time_ms', 'int32', '0+'),
        F('results', '[]AlterUserScramCredentialsResult', '0+', fields=[
            F('user', 'string', '0+'),
            F('error_code', 'int16', '0+'),
            F('error_message', 'string', '0+', nullable='0+'),
        ]),
    ],
)

API = Api(51, 'AlterUserScramCredentials', REQUEST, RESPONSE)
__getattr__ = message_classes(REQUEST, RESPONSE)  # produce.ProduceRequest, typed in the .pyi
