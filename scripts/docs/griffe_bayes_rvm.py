"""Griffe extension for the API reference (registered in mkdocs.yml under mkdocstrings).

The docstrings are numpydoc, written to read well in ``help()`` and Sphinx. For the site:

- Sphinx roles (``:func:`fit_type2```, ``:class:`~bayes_rvm.basis.KernelBasis```,
  ``:meth:`RVR.fit```, ``:data:``, ``:attr:``, ``:mod:``, ...) become mkdocstrings
  cross-references (``[`fit_type2`][bayes_rvm.solvers.fit_type2]``) when the name is an
  object of the package, and inline code otherwise (other packages: no inventories are
  fetched, the site builds offline). A name is looked up as Sphinx would: as written, then
  from the docstring's own class and module outwards, then from the package root. A public
  target must be on an API page (else the strict build fails on the unresolved reference);
  a private one (``_compress``) links where a page shows it and is inline code elsewhere.
- Private base classes (``_BaseRVM``) are dropped from the bases shown under a class;
  their public methods are documented on the public class as inherited members. griffe's
  ``dataclasses`` extension must run first (listed before this one in mkdocs.yml): it
  reads the constructor parameters the estimators inherit from their private base.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(func|class|meth|attr|data|obj|mod|exc|const):`(~?)([\w.]+)(\(\))?`")


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles to cross-references, hide private bases."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        objects = list(_walk(pkg))
        for obj in objects:
            if isinstance(obj, griffe.Class):
                obj.bases = [base for base in obj.bases if not _private(base)]
            if obj.docstring is not None:
                obj.docstring.value = ROLE.sub(
                    lambda match, obj=obj: _reference(match, obj, pkg), obj.docstring.value
                )


def _private(base: Any) -> bool:
    name = str(base).rsplit(".", 1)[-1]
    return name.startswith("_")


def _candidates(name: str, obj: griffe.Object, pkg: griffe.Module) -> list[str]:
    scopes = []
    scope: griffe.Object | None = obj
    while scope is not None:
        scopes.append(scope.path)
        scope = scope.parent
    return [name, *(f"{scope}.{name}" for scope in scopes), f"{pkg.path}.{name}"]


def _resolve(path: str, pkg: griffe.Module) -> griffe.Object | None:
    """The object ``path`` names inside the package (aliases followed), or None."""
    if path != pkg.path and not path.startswith(pkg.path + "."):
        return None
    try:
        target = pkg[path.removeprefix(pkg.path + ".")] if path != pkg.path else pkg
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    if target.is_alias:
        try:
            target = target.final_target
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    return target


def _reference(match: re.Match, obj: griffe.Object, pkg: griffe.Module) -> str:
    _, tilde, name, call = match.groups()
    shown = (name.rsplit(".", 1)[-1] if tilde else name) + (call or "")
    for candidate in _candidates(name, obj, pkg):
        target = _resolve(candidate, pkg)
        if target is None:
            continue
        path = target.path
        if target.is_attribute or any(part.startswith("_") for part in path.split(".")):
            return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'
        return f"[`{shown}`][{path}]"
    return f"`{shown}`"
