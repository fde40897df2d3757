//! Resources: the hierarchy grants are made on and requests name.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest tenant, catalog, namespace level or table name a resource may name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// What a grant is on and what a request touches. A container covers everything beneath it:
/// `Tenant` > `Catalog` > `Namespace` (which covers its sub-namespaces) > `Table`.
///
/// Tables and views share `Table`, as they share one name space in a catalog.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Resource {
    /// A whole tenant: its catalogs, warehouses, users, roles and audit log.
    Tenant {
        /// The tenant's name.
        tenant: String,
    },
    /// One catalog of a tenant.
    Catalog {
        /// The tenant's name.
        tenant: String,
        /// The catalog's name.
        catalog: String,
    },
    /// A namespace and every namespace, table and view beneath it.
    Namespace {
        /// The tenant's name.
        tenant: String,
        /// The catalog's name.
        catalog: String,
        /// The namespace's levels, outermost first; never empty.
        namespace: Vec<String>,
    },
    /// One table or view.
    Table {
        /// The tenant's name.
        tenant: String,
        /// The catalog's name.
        catalog: String,
        /// The levels of the namespace holding it, outermost first; never empty.
        namespace: Vec<String>,
        /// The table's or view's name.
        name: String,
    },
}

/// Why a resource was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// A name (tenant, catalog, namespace level or table) is empty.
    #[error("{what} name cannot be empty in `{resource}`")]
    EmptyName {
        /// Which name.
        what: &'static str,
        /// The resource, displayed.
        resource: String,
    },
    /// A name is longer than [`MAX_NAME_BYTES`].
    #[error("{what} name in `{resource}` is longer than {MAX_NAME_BYTES} bytes")]
    TooLong {
        /// Which name.
        what: &'static str,
        /// The resource, displayed.
        resource: String,
    },
    /// A name holds a control character.
    #[error("{what} name in `{resource}` contains a control character")]
    ControlCharacter {
        /// Which name.
        what: &'static str,
        /// The resource, displayed.
        resource: String,
    },
    /// A namespace or table with no namespace levels.
    #[error("`{0}` names no namespace level; grant on the catalog instead")]
    NoNamespace(String),
}

impl Resource {
    /// The whole tenant `tenant`.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        Self::Tenant {
            tenant: tenant.into(),
        }
    }

    /// The catalog `catalog` of `tenant`.
    pub fn catalog(tenant: impl Into<String>, catalog: impl Into<String>) -> Self {
        Self::Catalog {
            tenant: tenant.into(),
            catalog: catalog.into(),
        }
    }

    /// The namespace with these levels in a catalog.
    pub fn namespace<L: Into<String>>(
        tenant: impl Into<String>,
        catalog: impl Into<String>,
        levels: impl IntoIterator<Item = L>,
    ) -> Self {
        Self::Namespace {
            tenant: tenant.into(),
            catalog: catalog.into(),
            namespace: levels.into_iter().map(Into::into).collect(),
        }
    }

    /// The table or view `name` in the namespace with these levels.
    pub fn table<L: Into<String>>(
        tenant: impl Into<String>,
        catalog: impl Into<String>,
        levels: impl IntoIterator<Item = L>,
        name: impl Into<String>,
    ) -> Self {
        Self::Table {
            tenant: tenant.into(),
            catalog: catalog.into(),
            namespace: levels.into_iter().map(Into::into).collect(),
            name: name.into(),
        }
    }

    /// The tenant the resource belongs to.
    pub fn tenant_name(&self) -> &str {
        match self {
            Self::Tenant { tenant }
            | Self::Catalog { tenant, .. }
            | Self::Namespace { tenant, .. }
            | Self::Table { tenant, .. } => tenant,
        }
    }

    /// Whether this resource is `other` or a container of it. Never upwards or sideways.
    pub fn covers(&self, other: &Self) -> bool {
        if self.tenant_name() != other.tenant_name() {
            return false;
        }
        match (self, other) {
            (Self::Tenant { .. }, _) => true,
            (Self::Catalog { catalog, .. }, _) => other.catalog_name() == Some(catalog.as_str()),
            (
                Self::Namespace {
                    catalog, namespace, ..
                },
                Self::Namespace {
                    catalog: c,
                    namespace: n,
                    ..
                }
                | Self::Table {
                    catalog: c,
                    namespace: n,
                    ..
                },
            ) => catalog == c && n.starts_with(namespace),
            (Self::Table { .. }, Self::Table { .. }) => self == other,
            (Self::Namespace { .. } | Self::Table { .. }, _) => false,
        }
    }

    /// Checks every name: not empty, not too long, no control characters, and at least one
    /// namespace level where there are levels.
    pub fn validate(&self) -> Result<(), ResourceError> {
        let (levels, names): (Option<&[String]>, Vec<(&'static str, &str)>) = match self {
            Self::Tenant { tenant } => (None, vec![("tenant", tenant)]),
            Self::Catalog { tenant, catalog } => {
                (None, vec![("tenant", tenant), ("catalog", catalog)])
            }
            Self::Namespace {
                tenant,
                catalog,
                namespace,
            } => (
                Some(namespace),
                vec![("tenant", tenant), ("catalog", catalog)],
            ),
            Self::Table {
                tenant,
                catalog,
                namespace,
                name,
            } => (
                Some(namespace),
                vec![("tenant", tenant), ("catalog", catalog), ("table", name)],
            ),
        };
        if levels.is_some_and(<[String]>::is_empty) {
            return Err(ResourceError::NoNamespace(self.to_string()));
        }
        let levels = levels
            .unwrap_or_default()
            .iter()
            .map(|l| ("namespace", l.as_str()));
        for (what, name) in names.into_iter().chain(levels) {
            self.check_name(what, name)?;
        }
        Ok(())
    }

    fn check_name(&self, what: &'static str, name: &str) -> Result<(), ResourceError> {
        let resource = || self.to_string();
        if name.is_empty() {
            return Err(ResourceError::EmptyName {
                what,
                resource: resource(),
            });
        }
        if name.len() > MAX_NAME_BYTES {
            return Err(ResourceError::TooLong {
                what,
                resource: resource(),
            });
        }
        if name.chars().any(char::is_control) {
            return Err(ResourceError::ControlCharacter {
                what,
                resource: resource(),
            });
        }
        Ok(())
    }

    fn catalog_name(&self) -> Option<&str> {
        match self {
            Self::Tenant { .. } => None,
            Self::Catalog { catalog, .. }
            | Self::Namespace { catalog, .. }
            | Self::Table { catalog, .. } => Some(catalog),
        }
    }
}

impl fmt::Display for Resource {
    /// `tenant/catalog/ns.sub/table`, for messages and logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tenant { tenant } => write!(f, "{tenant}"),
            Self::Catalog { tenant, catalog } => write!(f, "{tenant}/{catalog}"),
            Self::Namespace {
                tenant,
                catalog,
                namespace,
            } => write!(f, "{tenant}/{catalog}/{}", namespace.join(".")),
            Self::Table {
                tenant,
                catalog,
                namespace,
                name,
            } => write!(f, "{tenant}/{catalog}/{}/{name}", namespace.join(".")),
        }
    }
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Self::Tenant { .. } => "Tenant",
            Self::Catalog { .. } => "Catalog",
            Self::Namespace { .. } => "Namespace",
            Self::Table { .. } => "Table",
        };
        write!(f, "{kind}({self})")
    }
}
