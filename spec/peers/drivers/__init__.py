"""Python drivers of third-party file tools (the catalog's "driver" peers)."""
