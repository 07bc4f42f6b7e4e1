"""Drivers: how the suite reaches an implementation (DESIGN §2).

A driver is selected as ``module:factory`` (``--editspec-driver``), where ``factory`` is
a ``DriverFactory``: ``(workspace_root, state_dir) -> Driver``. The default is the
reference engine. ``--editspec-mcp="COMMAND"`` builds a factory from an MCP server
command line through the adapter ``editspec.contract.drivers.mcp``;
``--editspec-mcp-url=URL`` (with ``--editspec-mcp-root=DIR``, the root that server
serves) one for a server already running over Streamable HTTP.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from editspec.contract import DriverFactory

DEFAULT_DRIVER = "editspec.contract.drivers.reference:factory"
MCP_ADAPTER = "editspec.contract.drivers.mcp"


class DriverLoadError(Exception):
    """The driver named on the command line cannot be loaded (a usage error)."""


@attrs.frozen(kw_only=True)
class DriverSpec:
    """How to build the factory again, in this process or a child process."""

    driver: str | None = None  # "module:factory"
    mcp: str | None = None  # an MCP server command line
    mcp_map: str | None = None  # a tool-name map file for the MCP adapter
    mcp_url: str | None = None  # a running MCP server's Streamable HTTP endpoint
    mcp_root: str | None = None  # the workspace root that server serves (shared by clauses)

    def describe(self) -> str:
        if self.mcp is not None:
            return f"mcp: {self.mcp}"
        if self.mcp_url is not None:
            return f"mcp-url: {self.mcp_url}"
        return self.driver or DEFAULT_DRIVER

    def to_dict(self) -> dict[str, str | None]:
        return {
            "driver": self.driver,
            "mcp": self.mcp,
            "mcp_map": self.mcp_map,
            "mcp_url": self.mcp_url,
            "mcp_root": self.mcp_root,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriverSpec:
        return cls(
            driver=data.get("driver"),
            mcp=data.get("mcp"),
            mcp_map=data.get("mcp_map"),
            mcp_url=data.get("mcp_url"),
            mcp_root=data.get("mcp_root"),
        )


def _import_here(module_name: str) -> Any:
    """Import a module as ``python -m`` would: the current directory is searched too."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        top = module_name.partition(".")[0]
        if exc.name != top or here in sys.path or "" in sys.path:
            raise
        sys.path.insert(0, here)
        return importlib.import_module(module_name)


def load_factory(spec: str) -> DriverFactory:
    """Import ``module:attribute`` (the attribute may be dotted) and check it is callable.

    The module is looked up on ``sys.path`` and then, as ``python -m`` does, in the
    current directory.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise DriverLoadError(f"a driver is named as module:factory, not {spec!r}")
    try:
        target: Any = _import_here(module_name)
    except ImportError as exc:
        raise DriverLoadError(f"cannot import driver module {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise DriverLoadError(f"{module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise DriverLoadError(f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


def _adapter_factory(
    builder: str, target: str, map_path: str | None, **options: str
) -> DriverFactory:
    try:
        adapter = importlib.import_module(MCP_ADAPTER)
    except ModuleNotFoundError as exc:
        if exc.name == MCP_ADAPTER:
            raise DriverLoadError(
                f"--editspec-mcp needs the MCP adapter {MCP_ADAPTER}, which this installation "
                "does not have"
            ) from exc
        raise DriverLoadError(
            f"the MCP adapter needs {exc.name!r}: install editspec[mcp] ({exc})"
        ) from exc
    build = getattr(adapter, builder, None)
    if build is None:
        raise DriverLoadError(f"{MCP_ADAPTER} has no {builder}(target, map_path)")
    if map_path is not None and not Path(map_path).is_file():
        raise DriverLoadError(f"MCP map file not found: {map_path}")
    return build(target, map_path, **options)  # type: ignore[no-any-return]


def mcp_factory(command: str, map_path: str | None) -> DriverFactory:
    """The MCP adapter's factory for a server command line (and an optional tool map)."""
    return _adapter_factory("factory_from_options", command, map_path)


def mcp_url_factory(url: str, map_path: str | None, root: str) -> DriverFactory:
    """The MCP adapter's factory for a running server at a Streamable HTTP URL over ``root``."""
    return _adapter_factory("factory_from_url", url, map_path, root=root)


def factory_for(spec: DriverSpec) -> DriverFactory:
    if spec.driver is not None and spec.mcp is not None:
        raise DriverLoadError("choose one of --editspec-driver and --editspec-mcp")
    if spec.mcp_url is not None and (spec.driver is not None or spec.mcp is not None):
        raise DriverLoadError("--editspec-mcp-url goes with neither --editspec-driver nor -mcp")
    if (spec.mcp_url is None) != (spec.mcp_root is None):
        raise DriverLoadError(
            "--editspec-mcp-url needs --editspec-mcp-root (the root the server serves), "
            "and --editspec-mcp-root applies only with it"
        )
    if spec.mcp is not None:
        return mcp_factory(spec.mcp, spec.mcp_map)
    if spec.mcp_url is not None and spec.mcp_root is not None:
        return mcp_url_factory(spec.mcp_url, spec.mcp_map, spec.mcp_root)
    if spec.mcp_map is not None:
        raise DriverLoadError("--editspec-mcp-map applies only with --editspec-mcp")
    return load_factory(spec.driver or DEFAULT_DRIVER)


__all__ = [
    "DEFAULT_DRIVER",
    "DriverLoadError",
    "DriverSpec",
    "factory_for",
    "load_factory",
    "mcp_factory",
    "mcp_url_factory",
]
