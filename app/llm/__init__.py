"""Model access: the only package that imports ``anthropic`` — the client and its failures as
sentences, the request adapter and streaming, the models catalog, prices."""
