"""Size limits of the engine (DESIGN §3); every one is configurable."""

from __future__ import annotations

import attrs

KiB = 1024
MiB = 1024 * KiB


@attrs.frozen(kw_only=True)
class Limits:
    """Bounds that turn runaway input into ``TOO_LARGE`` before any work scales with it."""

    patch_bytes: int = 1 * MiB
    patch_files: int = 100
    patch_hunks: int = 1000
    patch_lines: int = 50_000
    edit_file_bytes: int = 10 * MiB
    transaction_bytes: int = 32 * MiB
    read_max_bytes: int = 256 * KiB
    binary_preview_bytes: int = 64
    grep_file_bytes: int = 10 * MiB
    growth_warning_factor: int = 10
    # Arguments (Spec: PATH-061, PATH-062, LIMIT-030, LIMIT-031). The file system's own
    # PATH_MAX / NAME_MAX (``pathconf`` of the root) are a ceiling over the first two.
    path_bytes: int = 4095  # Linux PATH_MAX less its NUL; INVALID_ARGUMENT beyond
    name_bytes: int = 255  # NAME_MAX: one component
    path_depth: int = 256  # components below the root, checked before any walk
    grep_pattern_chars: int = 16 * KiB  # TOO_LARGE beyond
    glob_pattern_chars: int = 4 * KiB  # TOO_LARGE beyond
    edits_per_call: int = 1000  # TOO_LARGE beyond
    grep_seconds: float = 60.0  # a grep without a deadline ends CANCELLED after this
    # Retention of the trees a Delete moved into the quarantine (``_quarantine``): rewind
    # needs none of them (snapshots keep the bytes), so they go after this age, and the
    # oldest beyond this count, at each tree delete and each recovery. None: no bound.
    quarantine_seconds: float | None = 7 * 24 * 3600.0
    quarantine_trees: int | None = 100
