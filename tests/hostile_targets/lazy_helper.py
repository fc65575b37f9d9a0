"""Imported by lazy_import_server.py once it runs; its module-level state must start anew in
every process, preloaded or not."""

BUMPS = 0
