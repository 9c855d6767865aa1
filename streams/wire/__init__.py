"""The wire: what crosses the broker, shared by the worker, the client side and the CLI.

Payload models (the public contract of every topic), topic names and creation, dead letters that always fit,
and the Kafka client settings (TLS / SASL). May import: :mod:`engine` and third-party libraries (aiokafka for
the client settings); nothing else under :mod:`streams`.
"""
