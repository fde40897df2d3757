//! `pangolin login --oidc`: sign in through the tenant's identity provider with the device
//! authorization grant: the person opens the provider's page in any browser (on any machine)
//! and confirms the code shown here, while this polls the provider for the tokens.

use reqwest::Method;
use serde::Deserialize;

use crate::client::{Client, Request, Tokens, status_error};
use crate::error::{CliError, Result};
use crate::profile::OidcSession;

/// One provider as `GET /api/v1/auth/providers` names it.
#[derive(Debug, Deserialize)]
struct Listed {
    name: String,
    issuer: String,
    #[serde(default)]
    cli: Option<ListedClient>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ListedClient {
    client_id: String,
    scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Listing {
    providers: Vec<Listed>,
}

/// Signs in through `tenant`'s provider `wanted` (or its only one people sign in through;
/// without a tenant, the root scope's), printing the provider's page and code to standard
/// error.
pub(crate) async fn sign_in(
    client: &Client,
    tenant: Option<&str>,
    wanted: Option<&str>,
) -> Result<(Tokens, OidcSession)> {
    let mut request = Request::api(Method::GET, &["auth", "providers"]);
    if let Some(tenant) = tenant {
        request = request.query("tenant", tenant);
    }
    let whose = whose(tenant);
    let answer = client.send_as(&request, None).await?;
    if !answer.status.is_success() {
        return Err(status_error(&answer));
    }
    let listing: Listing = serde_json::from_value(answer.body.clone())
        .map_err(|e| CliError::server(format!("the server's list of identity providers: {e}")))?;
    let (provider, cli) = choose(listing.providers, &whose, wanted)?;
    let unavailable = |e: &dyn std::fmt::Display| CliError::server(e.to_string());
    let http = pangolin_oidc::http_client().map_err(|e| unavailable(&e))?;
    let discovery = pangolin_oidc::discover(&http, &provider.issuer)
        .await
        .map_err(|e| unavailable(&e))?;
    let (Some(device_endpoint), Some(token_endpoint)) = (
        discovery.device_authorization_endpoint.clone(),
        discovery.token_endpoint.clone(),
    ) else {
        return Err(CliError::server(format!(
            "the identity provider {} offers no device authorization (RFC 8628): sign in \
             with its token instead (pangolin login --token)",
            provider.issuer
        )));
    };
    let oauth = pangolin_oidc::OAuthClient {
        id: &cli.client_id,
        secret: None,
    };
    let device = pangolin_oidc::start_device(&http, &device_endpoint, oauth, &cli.scopes)
        .await
        .map_err(|e| refused(&provider, &e))?;
    let page = device
        .verification_uri_complete
        .as_deref()
        .unwrap_or(&device.verification_uri);
    eprintln!(
        "To sign in to {whose} through {} ({}), open\n\n    {page}\n\nin a browser \
         and confirm the code {}.",
        provider.name, provider.issuer, device.user_code
    );
    let mut said = false;
    let tokens = pangolin_oidc::await_device(&http, &token_endpoint, oauth, &device, |left| {
        if !said {
            eprintln!("Waiting for the confirmation (the code expires in {left} s) ...");
            said = true;
        }
    })
    .await
    .map_err(|e| refused(&provider, &e))?;
    Ok((
        Tokens {
            access: tokens.access_token,
            refresh: tokens.refresh_token,
        },
        OidcSession {
            issuer: provider.issuer,
            token_endpoint,
            client_id: cli.client_id,
        },
    ))
}

fn refused(provider: &Listed, error: &pangolin_oidc::FlowError) -> CliError {
    match error {
        pangolin_oidc::FlowError::Refused { .. } => CliError::auth(format!(
            "sign-in through {} was not completed: {error}",
            provider.name
        )),
        pangolin_oidc::FlowError::Unavailable { .. } => CliError::server(error.to_string()),
    }
}

/// How the scope signed in to is named in messages.
fn whose(tenant: Option<&str>) -> String {
    tenant.map_or_else(|| "the root scope".to_owned(), |t| format!("tenant `{t}`"))
}

/// The provider to sign in through, with its client for people; `whose` names the scope.
fn choose(
    providers: Vec<Listed>,
    whose: &str,
    wanted: Option<&str>,
) -> Result<(Listed, ListedClient)> {
    let names: Vec<String> = providers
        .iter()
        .filter(|p| p.cli.is_some())
        .map(|p| p.name.clone())
        .collect();
    let mut usable = providers.into_iter().filter(|p| p.cli.is_some());
    let chosen = match wanted {
        Some(name) => usable.find(|p| p.name == name),
        None if names.len() == 1 => usable.next(),
        None if names.is_empty() => None,
        None => {
            return Err(CliError::usage(format!(
                "{whose} signs in through several identity providers; choose one \
                 with --provider: {}",
                names.join(", ")
            )));
        }
    };
    let Some(mut provider) = chosen else {
        let known = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        return Err(CliError::not_found(format!(
            "{whose} has no identity provider {}that people sign in through from \
             here (the server's configuration names a `cli` client for those); it has: {known}",
            wanted.map(|w| format!("named `{w}` ")).unwrap_or_default()
        )));
    };
    let cli = provider
        .cli
        .take()
        .ok_or_else(|| CliError::server("the chosen provider lost its client"))?;
    Ok((provider, cli))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, cli: bool) -> Listed {
        Listed {
            name: name.to_owned(),
            issuer: format!("https://{name}.example.com"),
            cli: cli.then(|| ListedClient {
                client_id: "c".to_owned(),
                scopes: vec!["openid".to_owned()],
            }),
        }
    }

    #[test]
    fn the_only_provider_with_a_client_is_chosen_and_several_need_a_name() {
        let (p, _) = choose(vec![listed("a", false), listed("b", true)], "t", None).unwrap();
        assert_eq!(p.name, "b");
        let several = || vec![listed("a", true), listed("b", true)];
        let err = choose(several(), "t", None).unwrap_err();
        assert!(err.to_string().contains("--provider: a, b"), "{err}");
        let (p, _) = choose(several(), "t", Some("a")).unwrap();
        assert_eq!(p.name, "a");
        let err = choose(several(), "t", Some("c")).unwrap_err();
        assert!(
            err.to_string().contains("no identity provider named `c`"),
            "{err}"
        );
        let err = choose(vec![listed("a", false)], "t", None).unwrap_err();
        assert!(err.to_string().contains("it has: none"), "{err}");
    }
}
