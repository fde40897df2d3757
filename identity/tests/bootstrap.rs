//! The first root administrator.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Env, name, password};
use pangolin_identity::{BootstrapError, CreateUserError, Password, ROOT_USER, Scope};

async fn a_generated_root_password_is_returned_once(env: Env) {
    let generated = env.identity.bootstrap_root(None).await.unwrap().unwrap();
    generated.check_policy().unwrap();
    assert!(!format!("{generated:?}").contains(generated.expose()));
    let root = env
        .identity
        .authenticate(&Scope::Root, &name(ROOT_USER), &generated)
        .await
        .unwrap();
    assert!(root.is_admin);
    assert_eq!(root.id.to_string(), "user:~/root");
    // Later starts have nothing to print, and do not change the password.
    assert!(env.identity.bootstrap_root(None).await.unwrap().is_none());
    let restarted = env.server(common::config()).await;
    assert!(restarted.bootstrap_root(None).await.unwrap().is_none());
    restarted
        .authenticate(&Scope::Root, &name(ROOT_USER), &generated)
        .await
        .unwrap();
}

async fn a_configured_root_password_is_used_and_not_returned(env: Env) {
    let configured = password("configured-root-password");
    assert!(
        env.identity
            .bootstrap_root(Some(&configured))
            .await
            .unwrap()
            .is_none()
    );
    env.identity
        .authenticate(&Scope::Root, &name(ROOT_USER), &configured)
        .await
        .unwrap();
    let other = password("another-root-password");
    assert!(
        env.identity
            .bootstrap_root(Some(&other))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        env.identity
            .authenticate(&Scope::Root, &name(ROOT_USER), &other)
            .await
            .is_err()
    );
}

async fn an_existing_root_admin_means_nothing_to_do(env: Env) {
    env.identity
        .create_user(
            &Scope::Root,
            &name("alice"),
            &password("alice-root-password"),
            true,
        )
        .await
        .unwrap();
    assert!(env.identity.bootstrap_root(None).await.unwrap().is_none());
    assert!(
        env.identity
            .user(&Scope::Root, &name(ROOT_USER))
            .await
            .unwrap()
            .is_none()
    );
    // A tenant administrator is not a root administrator.
    let fresh = Env::new(common::Backend::Memory).await.unwrap();
    fresh
        .identity
        .create_user(
            &common::scope("acme"),
            &name("ana"),
            &password("tenant-admin-pass"),
            true,
        )
        .await
        .unwrap();
    assert!(fresh.identity.bootstrap_root(None).await.unwrap().is_some());
}

async fn a_weak_configured_root_password_is_refused(env: Env) {
    let err = env
        .identity
        .bootstrap_root(Some(&Password::new("short")))
        .await
        .unwrap_err();
    assert!(
        matches!(err, BootstrapError::Create(CreateUserError::Policy(_))),
        "{err}"
    );
    assert!(
        env.identity
            .user(&Scope::Root, &name(ROOT_USER))
            .await
            .unwrap()
            .is_none()
    );
}

on_every_backend!(
    a_generated_root_password_is_returned_once,
    a_configured_root_password_is_used_and_not_returned,
    an_existing_root_admin_means_nothing_to_do,
    a_weak_configured_root_password_is_refused,
);
