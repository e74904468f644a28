"""Domain metadata (PROTOCOL.md "Domain Metadata"): named configurations kept in the log.

A `domainMetadata` action sets a domain's configuration (a string) or, `removed`, deletes it; the
newest action per domain wins (engine.log.replay), and checkpoints carry every live domain. Writers
keep domains they do not understand untouched. `delta.*` domains belong to Delta's table features
(row tracking, clustering, ...), which only the engine's implementation of that feature may write;
user code gets the others, through `Transaction.set_domain_metadata` / `remove_domain_metadata`.
Writing one needs the `domainMetadata` writer feature, which the transaction adds to the protocol.
Two concurrent commits that change the same domain conflict (engine.write.conflicts).
"""

from __future__ import annotations

from collections.abc import Mapping

from airflow_txnlog.engine import feature_registry as registry
from airflow_txnlog.engine.errors import InvalidArgumentError
from airflow_txnlog.engine.log.actions import DomainMetadata
from airflow_txnlog.engine.validate import text

FEATURE = registry.DOMAIN_METADATA.name
RESERVED_PREFIX = "delta."


def user_domain(domain: object) -> str:
    """A user domain's name: a non-empty string not under `delta.` (any case)."""
    if not isinstance(domain, str) or not domain.strip():
        raise InvalidArgumentError(f"a metadata domain must be a non-empty string, got {domain!r}")
    if domain.lower().startswith(RESERVED_PREFIX):
        raise InvalidArgumentError(
            f"domain {domain!r} is reserved: `delta.*` domains belong to Delta's table features"
        )
    return domain


def setting(domain: object, configuration: object) -> DomainMetadata:
    """The action setting a user domain (both arguments checked)."""
    name = user_domain(domain)
    text("configuration", configuration, none_ok=False)
    assert isinstance(configuration, str)
    return DomainMetadata(name, configuration)


def removal(domain: object, live: Mapping[str, str]) -> DomainMetadata:
    """The action removing a user domain that `live` (the read snapshot's domains) has."""
    name = user_domain(domain)
    if name not in live:
        raise InvalidArgumentError(f"the table has no metadata domain {name!r} to remove")
    return DomainMetadata(name, live[name], removed=True)
