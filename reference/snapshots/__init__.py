"""Per-session snapshots and rewind (SNAP)."""
