"""The registry's errors: an HTTP status and Confluent's error code and message.

Confluent's REST API answers every failure with a body `{"error_code": N, "message": "..."}`,
where N is the HTTP status or the status followed by two digits (io.confluent.kafka.
schemaregistry.rest.exceptions.Errors). Clients switch on the code (confluent-kafka's
SchemaRegistryError.error_code), so the codes and their statuses are Confluent's; the messages
follow Confluent's wording so that a user searching one finds Confluent's documentation.
"""

from __future__ import annotations


class RegistryError(Exception):
    """A failure answered with `status` and the body {"error_code": code, "message": message}."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted. Set permanent=true to "
                                     "delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before being "
                                     "permanently deleted")


def subject_compatibility_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_configured(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(message: str) -> RegistryError:
    return RegistryError(409, 409, message)


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values "
                                     "are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility_level() -> RegistryError:
    return RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                     "backward_transitive, forward_transitive, and full_transitive")


def invalid_mode(mode: str) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode {mode!r}. Valid values are READWRITE, READONLY, IMPORT")


def operation_not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(message: str) -> RegistryError:
    return RegistryError(422, 42206, message)


def invalid_id(message: str) -> RegistryError:
    return RegistryError(422, 42207, message)


def bad_request(message: str, code: int = 400) -> RegistryError:
    return RegistryError(400 if code == 400 else 422, code, message)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, message)
