"""History brought from Claude.ai and ChatGPT (issue 40, DESIGN §14): reading their exports
(``archive``, ``reader``, ``claude``, ``chatgpt``, ``tree``, ``model``) and the one use case
that imports them (``importing``); what it stores is written by ``app.store.imported``."""
