//! Record keys of roles and bindings, all under `authz/`.
//!
//! Every segment is escaped (`%` as `%25`, `/` as `%2F`), so a tenant or principal id holding a
//! `/` (`user:acme/ana` does) never reads as two segments, and the prefix of one principal's
//! bindings is never the prefix of another's.

use pangolin_records::{RecordKey, RecordKeyError};

/// `authz/<tenant>/roles/`: the tenant's roles, one record each, keyed by role name.
pub(super) fn roles_prefix(tenant: &str) -> String {
    format!("authz/{}/roles/", escape(tenant))
}

/// `authz/<tenant>/roles/<role>`.
pub(super) fn role_key(tenant: &str, role: &str) -> Result<RecordKey, RecordKeyError> {
    RecordKey::new(format!("{}{}", roles_prefix(tenant), escape(role)))
}

/// `authz/<tenant>/bindings/`: every binding of the tenant, ordered by principal, then role.
pub(super) fn bindings_prefix(tenant: &str) -> String {
    format!("authz/{}/bindings/", escape(tenant))
}

/// `authz/<tenant>/bindings/<principal>/`: one principal's bindings.
pub(super) fn principal_prefix(tenant: &str, principal: &str) -> String {
    format!("{}{}/", bindings_prefix(tenant), escape(principal))
}

/// `authz/<tenant>/bindings/<principal>/<role>`: one binding.
pub(super) fn binding_key(
    tenant: &str,
    principal: &str,
    role: &str,
) -> Result<RecordKey, RecordKeyError> {
    RecordKey::new(format!(
        "{}{}",
        principal_prefix(tenant, principal),
        escape(role)
    ))
}

fn escape(segment: &str) -> String {
    segment.replace('%', "%25").replace('/', "%2F")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_prefix_never_prefixes_another_principal() {
        let ana = principal_prefix("acme", "user:acme/ana");
        let ana_b = binding_key("acme", "user:acme/ana/b", "r").unwrap();
        assert!(!ana_b.as_str().starts_with(&ana));
        assert_eq!(ana, "authz/acme/bindings/user:acme%2Fana/");
    }
}
