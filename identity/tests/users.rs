//! Users: names and scopes, per-tenant isolation, sign-in, disabling, password changes.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Env, name, password, scope};
use pangolin_identity::{
    AuthenticateError, ChangePasswordError, CreateUserError, NameError, PrincipalId, PrincipalName,
    Scope, TenantName, UpdateUserError, VerifyTokenError,
};

const PW: &str = "a-long-password-1";

#[test]
fn names_allow_letters_digits_underscore_and_dash_up_to_63() {
    PrincipalName::new("Ana_b-9").unwrap();
    PrincipalName::new("x".repeat(63)).unwrap();
    assert!(matches!(
        PrincipalName::new("x".repeat(64)),
        Err(NameError::TooLong { len: 64, .. })
    ));
    assert!(matches!(
        PrincipalName::new(""),
        Err(NameError::Empty { .. })
    ));
    for bad in ["a/b", "a b", "a.b", "~", "é"] {
        let err = TenantName::new(bad).unwrap_err();
        assert!(matches!(err, NameError::InvalidCharacter { .. }), "{bad}");
        assert!(err.to_string().contains(bad), "{err}");
    }
}

#[test]
fn root_and_tenant_principal_ids_cannot_be_confused() {
    let root = PrincipalId::parse("user:~/root").unwrap();
    assert_eq!(root.scope, Scope::Root);
    assert_eq!(root.to_string(), "user:~/root");
    let tenant = PrincipalId::parse("service:acme/etl").unwrap();
    assert_eq!(tenant.scope, scope("acme"));
    assert_eq!(tenant.to_string(), "service:acme/etl");
    assert!(PrincipalId::parse("user:~x/root").is_err());
    assert!(PrincipalId::parse("admin:acme/ana").is_err());
    assert!(PrincipalId::parse("user:acme").is_err());
}

async fn users_with_one_name_in_two_tenants_are_separate(env: Env) {
    let id = &env.identity;
    let (acme, globex) = (scope("acme"), scope("globex"));
    id.create_user(&acme, &name("ana"), &password("acme-password-1"), true)
        .await
        .unwrap();
    id.create_user(&globex, &name("ana"), &password("globex-password-1"), false)
        .await
        .unwrap();
    let p = id
        .authenticate(&acme, &name("ana"), &password("acme-password-1"))
        .await
        .unwrap();
    assert_eq!(p.id.to_string(), "user:acme/ana");
    assert!(p.is_admin);
    let p = id
        .authenticate(&globex, &name("ana"), &password("globex-password-1"))
        .await
        .unwrap();
    assert!(!p.is_admin);
    // One tenant's password does not open the other tenant's user.
    let err = id
        .authenticate(&globex, &name("ana"), &password("acme-password-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, AuthenticateError::InvalidCredentials));
    // Nor does the root scope see tenant users.
    let err = id
        .authenticate(&Scope::Root, &name("ana"), &password("acme-password-1"))
        .await
        .unwrap_err();
    assert!(matches!(err, AuthenticateError::InvalidCredentials));
    assert_eq!(id.list_users(&acme, None, 10).await.unwrap().users.len(), 1);
    assert!(
        id.list_users(&Scope::Root, None, 10)
            .await
            .unwrap()
            .users
            .is_empty()
    );
}

async fn a_user_in_another_tenant_is_invisible(env: Env) {
    let id = &env.identity;
    id.create_user(&scope("acme"), &name("bob"), &password(PW), false)
        .await
        .unwrap();
    assert!(
        id.user(&scope("globex"), &name("bob"))
            .await
            .unwrap()
            .is_none()
    );
    // Unknown user and wrong password give the same answer.
    let unknown = id
        .authenticate(&scope("globex"), &name("bob"), &password(PW))
        .await
        .unwrap_err();
    let wrong = id
        .authenticate(&scope("acme"), &name("bob"), &password("not-his-password"))
        .await
        .unwrap_err();
    assert_eq!(unknown.to_string(), wrong.to_string());
    assert!(matches!(unknown, AuthenticateError::InvalidCredentials));
}

async fn creating_twice_and_weak_passwords_are_refused(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    id.create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let err = id
        .create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateUserError::AlreadyExists(_)), "{err}");
    assert!(err.to_string().contains("user:acme/ana"), "{err}");
    let err = id
        .create_user(&acme, &name("eve"), &password("short"), false)
        .await
        .unwrap_err();
    assert!(matches!(err, CreateUserError::Policy(_)), "{err}");
    assert!(id.user(&acme, &name("eve")).await.unwrap().is_none());
}

async fn users_list_in_pages(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    for n in ["carl", "ana", "dora", "bob", "emil"] {
        id.create_user(&acme, &name(n), &password(PW), false)
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = id.list_users(&acme, after.as_ref(), 2).await.unwrap();
        assert!(page.users.len() <= 2);
        seen.extend(page.users.iter().map(|u| u.name.to_string()));
        match page.next_after {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["ana", "bob", "carl", "dora", "emil"]);
}

async fn deleted_and_disabled_users_cannot_sign_in(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    id.create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = id
        .authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap();
    let tokens = id.issue_tokens(&principal).unwrap();
    let user = id
        .set_user_disabled(&acme, &name("ana"), true)
        .await
        .unwrap();
    assert!(user.disabled);
    let err = id
        .authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap_err();
    assert!(matches!(err, AuthenticateError::InvalidCredentials));
    let err = id
        .verify_access_token(&tokens.access.token)
        .await
        .unwrap_err();
    assert!(
        matches!(err, VerifyTokenError::PrincipalInactive(_)),
        "{err}"
    );

    id.set_user_disabled(&acme, &name("ana"), false)
        .await
        .unwrap();
    id.authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap();
    id.delete_user(&acme, &name("ana")).await.unwrap();
    assert!(matches!(
        id.authenticate(&acme, &name("ana"), &password(PW)).await,
        Err(AuthenticateError::InvalidCredentials)
    ));
    assert!(matches!(
        id.delete_user(&acme, &name("ana")).await,
        Err(UpdateUserError::NotFound(_))
    ));
}

async fn a_password_change_invalidates_earlier_tokens(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    id.create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = id
        .authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap();
    let before = id.issue_tokens(&principal).unwrap();
    id.verify_access_token(&before.access.token).await.unwrap();

    env.clock.advance(Duration::from_millis(1));
    let err = id
        .change_password(
            &acme,
            &name("ana"),
            &password("wrong-old-password"),
            &password("new-password-22"),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, ChangePasswordError::InvalidCredentials),
        "{err}"
    );
    id.change_password(
        &acme,
        &name("ana"),
        &password(PW),
        &password("new-password-22"),
    )
    .await
    .unwrap();

    let err = id
        .verify_access_token(&before.access.token)
        .await
        .unwrap_err();
    assert!(matches!(err, VerifyTokenError::Superseded(_)), "{err}");
    assert!(id.refresh(&before.refresh.token).await.is_err());
    assert!(
        id.authenticate(&acme, &name("ana"), &password(PW))
            .await
            .is_err()
    );
    let principal = id
        .authenticate(&acme, &name("ana"), &password("new-password-22"))
        .await
        .unwrap();
    // A token issued in the same millisecond as the change is still good.
    let after = id.issue_tokens(&principal).unwrap();
    id.verify_access_token(&after.access.token).await.unwrap();
}

async fn an_admin_reset_needs_no_old_password_and_invalidates_tokens(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    id.create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = id
        .authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap();
    let before = id.issue_tokens(&principal).unwrap();
    env.clock.advance(Duration::from_secs(1));
    id.reset_password(&acme, &name("ana"), &password("reset-password-3"))
        .await
        .unwrap();
    assert!(id.verify_access_token(&before.access.token).await.is_err());
    id.authenticate(&acme, &name("ana"), &password("reset-password-3"))
        .await
        .unwrap();
    let err = id
        .reset_password(&acme, &name("nobody"), &password("reset-password-3"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChangePasswordError::NotFound(_)), "{err}");
    let err = id
        .reset_password(&acme, &name("ana"), &password("short"))
        .await
        .unwrap_err();
    assert!(matches!(err, ChangePasswordError::Policy(_)), "{err}");
}

async fn a_user_created_again_does_not_inherit_old_tokens(env: Env) {
    let id = &env.identity;
    let acme = scope("acme");
    id.create_user(&acme, &name("ana"), &password(PW), false)
        .await
        .unwrap();
    let principal = id
        .authenticate(&acme, &name("ana"), &password(PW))
        .await
        .unwrap();
    let old = id.issue_tokens(&principal).unwrap();
    env.clock.advance(Duration::from_secs(1));
    id.delete_user(&acme, &name("ana")).await.unwrap();
    id.create_user(&acme, &name("ana"), &password(PW), true)
        .await
        .unwrap();
    let err = id.verify_access_token(&old.access.token).await.unwrap_err();
    assert!(matches!(err, VerifyTokenError::Superseded(_)), "{err}");
}

on_every_backend!(
    a_user_created_again_does_not_inherit_old_tokens,
    users_with_one_name_in_two_tenants_are_separate,
    a_user_in_another_tenant_is_invisible,
    creating_twice_and_weak_passwords_are_refused,
    users_list_in_pages,
    deleted_and_disabled_users_cannot_sign_in,
    a_password_change_invalidates_earlier_tokens,
    an_admin_reset_needs_no_old_password_and_invalidates_tokens,
);
