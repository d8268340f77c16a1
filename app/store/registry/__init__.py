"""The workspace registry: workspaces, their order and nesting, the chats grouped
under them, first start and recovery.  ``registry.Registry`` is the front; see its docstring
for the parts."""
