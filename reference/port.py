"""Public names of the fs port, for code that wraps it (``editspec.fault_injection``).

``FileSystem`` is the port (``editspec.reference.FileSystem`` too); ``MUTATING`` names
its methods that change the disk (a crash plan counts them); ``is_temp_name`` tells the
temp files of the engine's atomic writes from any other file (a check after a crash
finds them). Nothing else of ``_fs`` or ``tools/_atomic`` is meant for other packages.
"""

from editspec.reference._fs import MUTATING, FileSystem
from editspec.reference.tools._atomic import is_temp_name

__all__ = ["MUTATING", "FileSystem", "is_temp_name"]
