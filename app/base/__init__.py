"""Base: what every layer above stands on — the database and its one writer, ids, folder
rules, titles, where data lives, logging, and the storage and network threads.  Imports only
the vocabulary (``app.errors``, ``app.events``, ``app.records``).  See docs/ARCHITECTURE.md."""
