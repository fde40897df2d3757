"""PyIceberg's REST client against Pangolin: namespaces, and reading the past of a branch."""

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
)


def test_nested_namespaces_with_properties(catalog, unique):
    catalog.create_namespace(unique, {"owner": "ana"})
    catalog.create_namespace((unique, "eu"))
    catalog.create_namespace((unique, "us"), {"region": "us-east"})

    assert (unique,) in catalog.list_namespaces()
    assert catalog.list_namespaces(unique) == [(unique, "eu"), (unique, "us")]
    assert catalog.load_namespace_properties(unique) == {"owner": "ana"}
    assert catalog.load_namespace_properties((unique, "us")) == {"region": "us-east"}
    assert catalog.namespace_exists((unique, "eu"))
    assert not catalog.namespace_exists((unique, "nope"))


def test_duplicate_and_missing_namespaces_are_errors(catalog, unique):
    catalog.create_namespace(unique)
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(unique)
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(f"{unique}_missing")
    with pytest.raises(BadRequestError, match="parent namespace"):
        catalog.create_namespace((f"{unique}_missing", "child"))


def test_properties_update_reports_what_changed(catalog, unique):
    catalog.create_namespace(unique, {"owner": "ana", "tier": "silver"})
    summary = catalog.update_namespace_properties(unique, removals={"owner", "ghost"}, updates={"tier": "gold"})
    assert summary.removed == ["owner"]
    assert summary.missing == ["ghost"]
    assert summary.updated == ["tier"]
    assert catalog.load_namespace_properties(unique) == {"tier": "gold"}


def test_only_empty_namespaces_can_be_dropped(catalog, unique):
    catalog.create_namespace(unique)
    catalog.create_namespace((unique, "child"))
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace(unique)
    catalog.drop_namespace((unique, "child"))
    catalog.drop_namespace(unique)
    assert not catalog.namespace_exists(unique)


def test_a_past_state_of_main_is_readable_and_read_only(server_url, catalog, unique):
    catalog.create_namespace(unique)
    catalog.create_namespace(f"{unique}_later")
    # One commit ago `<unique>_later` did not exist yet.
    past = RestCatalog("past", uri=server_url, warehouse="default@main~1")
    listed = past.list_namespaces()
    assert (unique,) in listed
    assert (f"{unique}_later",) not in listed
    with pytest.raises(BadRequestError, match="read-only"):
        past.create_namespace(f"{unique}_never")
    assert not catalog.namespace_exists(f"{unique}_never")


def test_a_branch_at_a_time_is_a_warehouse_too(server_url, catalog, unique):
    catalog.create_namespace(unique)
    # `#` in the warehouse comes back percent-encoded in the prefix, so PyIceberg can
    # paste it into its URLs; 2099 is after every commit, so this is main as it is now.
    at_time = RestCatalog("at-time", uri=server_url, warehouse="default@main#2099-01-01T00:00:00Z")
    assert (unique,) in at_time.list_namespaces()
    with pytest.raises(BadRequestError, match="did not exist"):
        RestCatalog("before", uri=server_url, warehouse="default@main#2001-01-01T00:00:00Z")
