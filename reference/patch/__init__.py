"""ApplyPatch (PATCH): parsing Codex patches and unified diffs, planning hunks, applying."""
