"""The workspace registry: workspaces, their order and nesting, the chats grouped
under them, first start and recovery.  ``registry.Registry`` is the front (a façade over
composed parts); ``memory.Memory`` owns the rows and their order (the sidebar's order)."""
