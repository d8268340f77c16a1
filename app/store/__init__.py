"""Store: everything Cairn persists, and the only package that runs SQL — the registry
(workspaces, order, chats, pins, archive, recovery), messages, knowledge versions and
watermarks, files and blobs, settings.  See docs/ARCHITECTURE.md."""
