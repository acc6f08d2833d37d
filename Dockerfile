# minibroker in a container: broker on 9092, data in /data (mount a volume there).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol protocol
COPY storage storage
# the installed names of protocol/ and storage/ (symlinks in the repository, issue 31)
COPY minibroker_protocol minibroker_protocol
COPY minibroker_storage minibroker_storage
COPY minibroker minibroker
COPY config.yaml ./
RUN pip install --no-cache-dir .
EXPOSE 9092
# Listen on all interfaces inside the container; ADVERTISED sets what clients are told to dial.
ENV ADVERTISED=localhost:9092
CMD ["sh", "-c", "exec python -m minibroker --host 0.0.0.0 --port 9092 --data-dir /data --config config.yaml --override advertised.listeners=PLAINTEXT://${ADVERTISED}"]
