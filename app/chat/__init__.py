"""Chats: the verbatim context block, the engine that sends a turn, and the turn itself."""
