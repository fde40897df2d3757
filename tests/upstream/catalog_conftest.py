"""Conftest override for PyIceberg's `tests/catalog/` (scripts/test-upstream copies it there as
`conftest.py`, next to `test_catalog_behaviors.py`, so that its fixtures win over those of
upstream's `tests/conftest.py`).

Upstream parametrizes `catalog` and `catalog_with_warehouse` over its in-memory and SQL
catalogs; here each is one REST catalog on a fresh `pangolin serve` (a new server and data
directory per test, as upstream builds a new catalog per test), with the warehouse upstream
gives its own catalogs: for `catalog` the session's base temporary directory (upstream's tests
put tables and the files they register in sibling temporary directories of the session, such
as `test_sql0` and `metadata0`, and Pangolin refuses any location outside its warehouse), the
session's `warehouse` directory for `catalog_with_warehouse`.
"""

from collections.abc import Generator
from pathlib import Path

import pytest
from pangolin_upstream import serve

from pyiceberg.catalog import Catalog, MetastoreCatalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties


class ParentsFirstRestCatalog(RestCatalog):
    """A RestCatalog whose `create_namespace` first creates the missing parents of a nested
    namespace.

    Pangolin creates a nested namespace only under an existing parent (as Apache Polaris and
    Nessie do; the REST spec leaves it open), answering 400 otherwise. Upstream's in-memory and
    SQL catalogs instead let `("com", "organization", "department")` be created at once, its
    parents existing implicitly, and most of the suite's tests are parametrized over such
    identifiers. Creating the parents here keeps those tests running against Pangolin (and
    gives `namespace_exists`/`list_namespaces` the implicit parents upstream expects) instead of
    turning two thirds of the suite into expected failures over that one rule.
    """

    def create_namespace(self, namespace: str | Identifier, properties: Properties = EMPTY_DICT) -> None:
        levels = self.identifier_to_tuple(namespace)
        for depth in range(1, len(levels)):
            if not self.namespace_exists(levels[:depth]):
                super().create_namespace(levels[:depth])
        super().create_namespace(namespace, properties)

    # `test_commit_table` reads the version in a metadata file name with this helper of
    # PyIceberg's own (metastore) catalogs, which RestCatalog lacks; Pangolin names its files
    # the same way (`<NNNNN>-<uuid>.metadata.json`), which is what the test checks.
    _parse_metadata_version = staticmethod(MetastoreCatalog._parse_metadata_version)


@pytest.fixture(params=["pangolin"])
def catalog(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Generator[Catalog, None, None]:
    with serve(f"file://{tmp_path_factory.getbasetemp()}", request.node) as url:
        yield ParentsFirstRestCatalog("test_catalog", uri=url)


@pytest.fixture(params=["pangolin"])
def catalog_with_warehouse(request: pytest.FixtureRequest, warehouse: Path) -> Generator[Catalog, None, None]:
    with serve(f"file://{warehouse}", request.node) as url:
        yield ParentsFirstRestCatalog("test_catalog", uri=url)
