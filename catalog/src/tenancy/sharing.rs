//! Which catalogs share files: those whose warehouses overlap, one root inside the other.
//! Warehouses are records of their tenant, and nothing stops two tenants, or two warehouses of
//! one, from naming the same bucket and folder; so before deleting files it does not know, a
//! catalog asks which others could be using them.

use super::Tenancy;
use super::catalog::{CatalogKind, OpenCatalogError};
use super::records::MAX_PAGE;
use super::tenant::ListError;
use crate::catalog::Catalog;

/// Why [`Tenancy::catalogs_sharing_files`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SharingError {
    #[error(transparent)]
    List(#[from] ListError),
    #[error(
        "catalog `{tenant}/{catalog}` cannot be opened to learn its warehouse ({source}); \
         files it may share cannot be told apart"
    )]
    Open {
        tenant: String,
        catalog: String,
        source: OpenCatalogError,
    },
}

impl Tenancy {
    /// Every other catalog of this server, of any tenant, whose warehouse overlaps `catalog`'s
    /// (the same root, or one inside the other), opened. None when `catalog` has no warehouse.
    pub async fn catalogs_sharing_files(
        &self,
        catalog: &Catalog,
    ) -> Result<Vec<Catalog>, SharingError> {
        let Some(root) = catalog.warehouse_ref().map(|w| folder(w.root())) else {
            return Ok(Vec::new());
        };
        let mut others = Vec::new();
        let mut tenants_after = None;
        loop {
            let tenants = self
                .list_tenants(tenants_after.as_deref(), MAX_PAGE)
                .await?;
            for tenant in &tenants.items {
                let tenant = tenant.value.name.as_str();
                let mut after = None;
                loop {
                    let page = self
                        .list_catalogs(tenant, after.as_deref(), MAX_PAGE)
                        .await?;
                    for record in &page.items {
                        let record = &record.value;
                        let name = record.name.as_str();
                        if !matches!(record.kind, CatalogKind::Local)
                            || (tenant == catalog.tenant() && name == catalog.name())
                        {
                            continue;
                        }
                        let other = self.open_catalog(tenant, name).await.map_err(|source| {
                            SharingError::Open {
                                tenant: tenant.to_owned(),
                                catalog: name.to_owned(),
                                source,
                            }
                        })?;
                        let shares = other.warehouse_ref().is_some_and(|w| {
                            let theirs = folder(w.root());
                            theirs.starts_with(&root) || root.starts_with(&theirs)
                        });
                        if shares {
                            others.push(other);
                        }
                    }
                    match page.next_after {
                        Some(next) => after = Some(next.to_string()),
                        None => break,
                    }
                }
            }
            match tenants.next_after {
                Some(next) => tenants_after = Some(next.to_string()),
                None => return Ok(others),
            }
        }
    }
}

/// A warehouse root as a folder URL ending in `/`, so that comparing prefixes compares whole
/// folder names: `/w/a` is inside neither `/w/ab` nor `file:///w/ab`.
fn folder(root: &str) -> String {
    let root = root.trim_end_matches('/');
    if root.contains("://") {
        format!("{root}/")
    } else {
        format!("file://{root}/")
    }
}

#[cfg(test)]
mod tests {
    use super::folder;

    #[test]
    fn roots_compare_as_whole_folders() {
        assert_eq!(folder("/w/a"), "file:///w/a/");
        assert_eq!(folder("file:///w/a/"), "file:///w/a/");
        assert!(!folder("/w/ab").starts_with(&folder("/w/a")));
        assert!(folder("s3://b/w/a/x").starts_with(&folder("s3://b/w/a")));
    }
}
