"""The catalog of real implementations (``catalog.toml``) and where they install."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# Where a peer with a Python of its own (the catalog's ``python``) has its interpreter,
# for the driver that starts the tool there.
PEER_PYTHON_VARIABLE = "EDITSPEC_PEER_PYTHON"
CATALOG_FILE = Path(__file__).with_name("catalog.toml")
_SPEC_DIR = Path(__file__).resolve().parent.parent
ADAPTERS_DIR = Path(__file__).resolve().parent / "adapters"  # {adapters} in a command
KINDS = ("mcp", "driver", "reference")
REGISTRIES = ("npm", "pypi")
_KEYS = frozenset(
    {
        "title",
        "version",
        "kind",
        "registry",
        "package",
        "entry",
        "command",
        "map",
        "driver",
        "expectations",
        "crash",
        "notes",
        "install_as",
        "install_env",
        "python",
    }
)


class CatalogError(ValueError):
    """The catalog is malformed, or a peer cannot be installed or named."""


@attrs.frozen(kw_only=True)
class Peer:
    """One implementation at one pinned version."""

    name: str
    title: str
    version: str
    kind: str
    registry: str | None = None
    package: str | None = None
    entry: str | None = None
    command: str | None = None
    map: str | None = None
    driver: str | None = None
    expectations: str | None = None
    crash: bool = False
    notes: str = ""
    install_as: str | None = None  # share the install of another entry (same package)
    install_env: Mapping[str, str] = attrs.field(factory=dict)  # for the installer only
    # "3.12": the peer needs that Python; it installs into a venv of its own made with it,
    # and runs there (a driver reaches it through a child process, a server is started
    # with {peer_python}).
    python: str | None = None

    @property
    def map_path(self) -> Path | None:
        return _SPEC_DIR / "mcp_maps" / self.map if self.map else None

    @property
    def expectations_path(self) -> Path | None:
        return _SPEC_DIR / "expectations" / self.expectations if self.expectations else None

    def prefix(self, cache: Path) -> Path:
        """Where this peer installs inside the cache (``install_as``: another entry's)."""
        return cache / (self.install_as or self.name)

    def installed(self, cache: Path) -> bool:
        if self.registry == "npm":
            return self.entry is not None and (self.prefix(cache) / self.entry).is_file()
        if self.registry == "pypi":
            return (self.prefix(cache) / ".installed").is_file()
        return True

    def peer_python(self, cache: Path) -> Path:
        """The interpreter the peer runs in: its own venv's, or this one."""
        if self.python is None:
            return Path(sys.executable)
        return self.prefix(cache) / "venv" / "bin" / "python"

    def install(self, cache: Path, *, log: Any = print) -> None:
        """Install the pinned version into the cache (npm or pip), unless it is there.

        One installer at a time per peer: a second caller (another process, or a thread)
        waits on the peer's lock file and then finds the peer installed, instead of running
        a second installer into the same prefix or using a half-installed one.
        """
        prefix = self.prefix(cache)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        with open(prefix.parent / f"{prefix.name}.install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.installed(cache):
                self._install(cache, prefix, log)

    def _install(self, cache: Path, prefix: Path, log: Any) -> None:
        prefix.mkdir(parents=True, exist_ok=True)
        spec = f"{self.package}@{self.version}" if self.registry == "npm" else ""
        if self.registry == "npm":
            if shutil.which("npm") is None:
                raise CatalogError(f"{self.name}: npm is not on PATH")
            command = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                       "--loglevel=error", spec]  # fmt: skip
        elif self.registry == "pypi" and self.python is not None:
            venv = [str(find_python(self.python)), "-m", "venv", str(prefix / "venv")]
            self._run_installer(venv, log)
            command = [str(self.peer_python(cache)), "-m", "pip", "install", "--quiet",
                       f"{self.package}=={self.version}"]  # fmt: skip
        elif self.registry == "pypi":
            command = [sys.executable, "-m", "pip", "install", "--quiet", "--target",
                       str(prefix / "site"), f"{self.package}=={self.version}"]  # fmt: skip
        else:
            return
        self._run_installer(command, log)
        if self.registry == "pypi":
            (prefix / ".installed").write_text(self.version, encoding="utf-8")

    def _run_installer(self, command: list[str], log: Any) -> None:
        log(f"installing {self.name}: {' '.join(command)}")
        env = {**os.environ, **self.install_env}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise CatalogError(
                f"{self.name}: install failed (exit {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )

    def check_arguments(self, cache: Path) -> list[str]:
        """The ``editspec check`` arguments that select this implementation."""
        if self.kind == "reference":
            return []
        if self.kind == "driver":
            assert self.driver is not None
            return ["--driver", self.driver]
        assert self.command is not None and self.map_path is not None
        return ["--mcp", self.server_command(cache), "--mcp-map", str(self.map_path)]

    def server_command(self, cache: Path) -> str:
        assert self.command is not None
        entry = str(self.prefix(cache) / self.entry) if self.entry else ""
        command = (
            self.command.replace("{entry}", entry)
            .replace("{python}", sys.executable)
            .replace("{adapters}", str(ADAPTERS_DIR))
        )
        return command.replace("{peer_python}", str(self.peer_python(cache)))

    def environment(self, cache: Path) -> dict[str, str]:
        env = dict(os.environ)
        if self.python is not None:  # a driver that runs the tool in its own interpreter
            env[PEER_PYTHON_VARIABLE] = str(self.peer_python(cache))
        elif self.registry == "pypi":
            site = str(self.prefix(cache) / "site")
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
        return env


def find_python(version: str) -> Path:
    """An interpreter of ``version`` ("3.12"): this one, else pyenv's newest of that
    version, else ``pythonX.Y`` on PATH; each checked by running it (a pyenv shim on PATH
    may name a version that is not selected)."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return Path(sys.executable)
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = sorted(
        root.glob(f"{version}.*/bin/python{version}"),
        key=lambda path: [int(part) if part.isdigit() else 0 for part in path.parts[-3].split(".")],
        reverse=True,
    )
    on_path = shutil.which(f"python{version}")
    if on_path is not None:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if _runs_as(candidate, version):
            return candidate
    raise CatalogError(
        f"Python {version} is needed and was not found (pyenv's {root}/{version}.*, or "
        f"python{version} on PATH); install it, e.g. with pyenv"
    )


def _runs_as(interpreter: Path, version: str) -> bool:
    try:
        done = subprocess.run(
            [str(interpreter), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def cache_dir(explicit: str | None = None) -> Path:
    """The peer cache: ``--cache``, else ``$EDITSPEC_PEER_CACHE``, else the user's cache."""
    chosen = explicit or os.environ.get("EDITSPEC_PEER_CACHE")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "editspec" / "peers"


def load_catalog(path: Path = CATALOG_FILE) -> dict[str, Peer]:
    """Every peer of the catalog by name, validated."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: {exc}") from None
    peers = {}
    for name, table in data.items():
        peers[name] = _peer(name, table, path)
    return peers


def _peer(name: str, table: Any, source: Path) -> Peer:
    where = f"{source.name}: [{name}]"
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise CatalogError(f"{where}: unknown keys {unknown}")
    for key in ("title", "version", "kind"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise CatalogError(f"{where} needs {key}")
    if table["kind"] not in KINDS:
        raise CatalogError(f"{where}: kind must be one of {KINDS}")
    registry = table.get("registry")
    if registry is not None and registry not in REGISTRIES:
        raise CatalogError(f"{where}: registry must be one of {REGISTRIES}")
    if registry is not None and not table.get("package"):
        raise CatalogError(f"{where}: a registry needs a package")
    if table["kind"] == "mcp" and not (table.get("command") and table.get("map")):
        raise CatalogError(f"{where}: an mcp peer needs a command and a map")
    if table["kind"] == "driver" and not table.get("driver"):
        raise CatalogError(f"{where}: a driver peer needs driver = MODULE:FACTORY")
    python = table.get("python")
    if python is not None and not (
        isinstance(python, str) and python.count(".") == 1 and python.replace(".", "").isdigit()
    ):
        raise CatalogError(f'{where}: python must be a version such as "3.12"')
    if python is not None and registry != "pypi":
        raise CatalogError(f"{where}: python is for a pypi peer")
    install_env = table.get("install_env", {})
    if not isinstance(install_env, Mapping) or not all(
        isinstance(v, str) for v in install_env.values()
    ):
        raise CatalogError(f"{where}: install_env must be a table of strings")
    peer = Peer(name=name, **{key: value for key, value in table.items()})
    for path in (peer.map_path, peer.expectations_path):
        if path is not None and not path.is_file():
            raise CatalogError(f"{where}: {path.name} does not exist under spec/")
    return peer
