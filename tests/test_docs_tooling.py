"""The documentation tooling of scripts/docs: the intersphinx inventories written offline."""

from __future__ import annotations

import io

import pytest


@pytest.fixture
def inventories(load_script):
    return load_script("scripts/docs/inventories.py")


def test_an_inventory_reads_back_through_sphinx(inventories):
    sphinx_inventory = pytest.importorskip("sphinx.util.inventory")
    entries = []
    for name in ("pymc.sample", "pymc.Model", "sklearn.pipeline.Pipeline", "ValueError"):
        obj, site = inventories.resolve(name)
        entries.append((name, inventories.role(obj, name), site.uri(name, obj)))
    data = inventories.inventory("test", entries)
    loaded = sphinx_inventory.InventoryFile.load(
        io.BytesIO(data), "https://example.org/", lambda base, uri: base + uri
    )
    assert (
        loaded["py:function"]["pymc.sample"].uri
        == "https://example.org/api/generated/pymc.sample.html#pymc.sample"
    )
    model = loaded["py:class"]["pymc.Model"]
    assert model.uri.endswith("api/generated/pymc.Model.html#pymc.Model")
    assert loaded["py:class"]["sklearn.pipeline.Pipeline"].uri == (
        "https://example.org/modules/generated/sklearn.pipeline.Pipeline.html"
        "#sklearn.pipeline.Pipeline"
    )
    assert loaded["py:exception"]["ValueError"].uri.endswith("library/exceptions.html#ValueError")


def test_arviz_names_point_to_the_package_that_defines_them(inventories):
    obj, site = inventories.resolve("arviz.loo")
    assert site.key == "arviz_stats"
    assert site.uri("arviz.loo", obj) == "api/generated/arviz_stats.loo.html#arviz_stats.loo"


def test_a_name_that_does_not_exist_stops_the_script(inventories):
    with pytest.raises(AttributeError):
        inventories.resolve("pymc.no_such_function")


def test_roles_of_docstrings_and_pages_are_found(inventories):
    text = (
        "See :func:`~pymc.sample`, {class}`xarray.DataTree`, :class:`the model <pymc.Model>`"
        " and :func:`bayes_rvm.fit_type2`."
    )
    found = {match[2] for match in inventories.ROLE.finditer(text)}
    assert found == {"pymc.sample", "xarray.DataTree", "pymc.Model", "bayes_rvm.fit_type2"}
