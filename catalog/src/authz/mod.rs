//! Authorization: who may do what, decided in one place, deny by default.
//!
//! # The decision
//!
//! [`decide`] is a pure function of a [`Principal`], the [`Role`]s bound to it and a
//! [`Request`] (a [`Privilege`] on a [`Resource`], at a branch). It answers [`Decision::Allow`]
//! or [`Decision::Deny`] with a [`DenyReason`] meant for the log and the audit record; clients
//! learn only that they were refused. The rules, in order:
//!
//! - Root (a principal of the root scope, `tenant: None`, with `is_admin`) may do everything.
//! - Any other principal of the root scope may do nothing: it belongs to no tenant, and every
//!   resource belongs to one.
//! - Nothing outside the principal's own tenant, whatever a role says.
//! - A tenant admin may do everything inside its tenant.
//! - Anyone else may do what one grant of its bound roles allows. Only enabled roles of the
//!   principal's tenant count, and only their grants on resources of that tenant (such grants
//!   are refused when a role is stored, and ignored should one be stored anyway).
//!
//! A grant allows a request when the privilege is the same (privileges are independent: `Write`
//! does not imply `Read`, which keeps every grant's meaning readable from the grant alone), its
//! resource is the requested one or a container of it, and its branch pattern matches the
//! request's branch. Containers: `Tenant` > `Catalog` > `Namespace` (covering sub-namespaces)
//! > `Table` (tables and views share it); never upwards or to a sibling.
//!
//! # Branches
//!
//! `Read`, `Write`, `Create`, `Drop` and `ManageRefs` are exercised at a branch; the request
//! names it (for a read at a tag or at a commit in a ref's history, the ref's name; for a merge,
//! cherry-pick or revert, the target branch with `Write`). A grant's [`BranchPattern`] is `*`,
//! an exact name or a prefix with one trailing `*` (`release/*`, `dev*`, which also matches
//! `dev`). A request at no branch (reading a catalog's settings, say) is allowed only by a
//! grant on every branch (`*`). Protected branches follow: give writers `Write` on `dev*` and
//! only a `release` role `Write` on `main`, and only `release` can commit to or merge into
//! `main`. `ManageGrants`, `ManageCatalogs`, `ManageUsers` and `ReadAudit` ignore patterns.
//!
//! # Listing
//!
//! [`decide_any`] answers whether the principal holds the privilege on the resource or on
//! anything beneath it, and [`filter_visible`] keeps the items of a listing for which it does:
//! a namespace is listed when it or something under it is readable. This reveals the names of
//! the namespaces leading to what one may read, and nothing else.
//!
//! # Anti-escalation
//!
//! [`may_grant`] is the one check behind every grant: root may grant anything, a tenant admin
//! anything in its tenant; anyone else needs `ManageGrants` on the grant's resource (or a
//! container) and must hold the granted privilege itself, through one grant on a resource
//! covering the new grant's, whose branch pattern covers the new one (`*` covers all; `p*`
//! covers `q` and `q*` when `q` starts with `p`; a name covers only itself). So a grant never
//! allows a request its granter could not make. [`may_manage_role`] applies it to every grant
//! a role operation adds or removes (creating, deleting, and changing a role: grants added,
//! grants removed, or all of them when the role is enabled or disabled) and requires
//! `ManageGrants` somewhere in the tenant even for a role without grants. [`may_bind`] applies
//! it to every grant of the role being bound or unbound, and binds roles only to principals of
//! the role's tenant (principal ids `user:<tenant>/<name>`, `service:<tenant>/<name>`; root
//! scope ids have no `/`). Only root acts in another tenant. Admin flags are properties of
//! users, not grants: no role makes anyone an admin, so a tenant admin cannot make anyone root.
//!
//! # Storage
//!
//! [`AuthzStore`] keeps roles and bindings as records under `authz/`, changed by
//! compare-and-swap (see its module for the layout). Deleting a role removes it from every
//! decision at once: [`AuthzStore::roles_of`] leaves out bindings to roles that no longer
//! exist (and a role created again under that name applies again to its old bindings).

mod decide;
mod escalation;
mod model;
mod pattern;
mod privilege;
mod resource;
mod store;

pub use decide::{Decision, DenyReason, Request, decide, decide_any, filter_visible};
pub use escalation::{GrantRefusal, may_bind, may_grant, may_manage_role};
pub use model::{
    Grant, MAX_ROLE_NAME_BYTES, Principal, PrincipalIdError, PrincipalKind, Role, RoleError,
    principal_id_tenant, validate_role_name,
};
pub use pattern::{BranchPattern, BranchPatternError};
pub use privilege::Privilege;
pub use resource::{MAX_NAME_BYTES, Resource, ResourceError};
pub use store::{
    AuthzStore, AuthzStoreError, BindError, BindingPage, CreateRoleError, DeleteRoleError,
    PrincipalPage, RolePage, StoredRole, UnbindError, UpdateRoleError,
};
