"""Apache Kafka as the reference broker and the source of Kafka's own tools (see kafka_reference)."""
