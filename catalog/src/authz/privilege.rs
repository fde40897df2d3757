//! Privileges: what a grant allows.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a grant allows on its resource. Privileges are independent: none implies another
/// (`Write` does not imply `Read`), so a grant allows exactly the requests naming its privilege.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Privilege {
    /// Load, list and check the existence of namespaces, tables and views; read the log and
    /// diffs at a ref.
    Read,
    /// Commit to tables and views, change namespace properties, be the target branch of a
    /// merge, cherry-pick or revert.
    Write,
    /// Create namespaces, tables and views, and register tables and views.
    Create,
    /// Drop namespaces, tables and views; purge tables.
    Drop,
    /// Create, move and delete branches and tags.
    ManageRefs,
    /// Create, change and delete roles; bind roles to principals.
    ManageGrants,
    /// Create, change and delete the tenant's catalogs and warehouses.
    ManageCatalogs,
    /// Create, change and delete the tenant's users, service users and API keys.
    ManageUsers,
    /// Read the tenant's audit log.
    ReadAudit,
}

impl Privilege {
    /// Every privilege, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Read,
        Self::Write,
        Self::Create,
        Self::Drop,
        Self::ManageRefs,
        Self::ManageGrants,
        Self::ManageCatalogs,
        Self::ManageUsers,
        Self::ReadAudit,
    ];

    /// Whether the privilege is exercised at a branch, so that a grant's branch pattern
    /// restricts it. The others ignore branch patterns and the request's branch.
    pub fn is_branch_scoped(self) -> bool {
        match self {
            Self::Read | Self::Write | Self::Create | Self::Drop | Self::ManageRefs => true,
            Self::ManageGrants | Self::ManageCatalogs | Self::ManageUsers | Self::ReadAudit => {
                false
            }
        }
    }

    /// The name used in stored roles and messages (`manage-refs`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Create => "create",
            Self::Drop => "drop",
            Self::ManageRefs => "manage-refs",
            Self::ManageGrants => "manage-grants",
            Self::ManageCatalogs => "manage-catalogs",
            Self::ManageUsers => "manage-users",
            Self::ReadAudit => "read-audit",
        }
    }
}

impl fmt::Display for Privilege {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
