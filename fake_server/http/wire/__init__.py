"""The wire contract: one module per resource family, each holding its requests' parsing
and its JSON, beside ``common`` (envelope, timestamps, body reading, field parsers), which they
share. Handlers in ``fake_server.http`` (and the dashboard's projections) import from here.
"""
