"""Guards of every change: per-session access records (TRACK) and per-key locks (LOCK)."""
