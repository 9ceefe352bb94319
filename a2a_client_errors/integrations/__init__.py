"""Optional integrations, each importing its library only when it is itself imported.

* ``a2a_client_errors.integrations.a2a_sdk``: guard an a2a-sdk ``Client`` (extra ``a2a``).
* ``a2a_client_errors.integrations.adk``: google-adk's ``RemoteA2aAgent`` failures, typed on
  its events (a plugin; google-adk is imported by the plugin only).
* ``a2a_client_errors.integrations.grpc``: a ``grpc.aio`` client interceptor (extra ``grpc``).
* ``a2a_client_errors.integrations.postgres``: the in-flight journal on PostgreSQL (extra
  ``postgres``).

Importing this package imports none of them.
"""
