"""The knowledge panel: a workspace's document (editor, preview, history), its instructions
and its files; the same editor serves personal memory in Settings."""

from ui.knowledge.panel import KnowledgePanel

__all__ = ["KnowledgePanel"]
