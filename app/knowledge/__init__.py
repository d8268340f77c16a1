"""Knowledge documents: storage, parsing into sections and entries, and (later) the rebuild."""
