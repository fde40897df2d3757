//! `pangolin login`: sign in (a password, an API key or a given token), check the server
//! answers, and save a profile with the tokens.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::{Client, Request, Tokens, status_error};
use crate::context::print_json;
use crate::error::{CliError, Exit, Result};
use crate::json::Ordered;
use crate::profile::{self, GlobalArgs, Profile, Profiles, Settings};
use crate::secret;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin login --server http://127.0.0.1:8080 --user root",
        "pangolin login --server http://lake.internal:8080 --tenant acme --user ana --profile acme",
        "printf '%s\\n' \"$PASSWORD\" | pangolin login --user ana --tenant acme --password-stdin",
        "pangolin login --server http://lake.internal:8080 --api-key \"$PANGOLIN_API_KEY\"",
        "pangolin login --server http://lake.internal:8080 --tenant acme --oidc",
        "pangolin login --server http://lake.internal:8080 --oidc --root --profile ops",
        "pangolin login --server http://127.0.0.1:8080    # a server run with --no-auth",
        "pangolin branch list --profile acme",
    ],
    "With --user, signs in with a password and keeps the access token (1 hour) and the\n\
     refresh token (7 days): when the server refuses an expired access token, commands\n\
     refresh it once and save the new pair. The password is read from the terminal without\n\
     echo; from standard input with --password-stdin, or when it is not a terminal; or from\n\
     PANGOLIN_PASSWORD. Leave out --tenant to sign in as a root-scope user such as `root`.\n\
     With --api-key (or PANGOLIN_API_KEY), a service user's key is checked and saved.\n\
     With --oidc, signs in through the tenant's identity provider (--tenant, else `default`;\n\
     --root for a provider of the root scope, which signs in the deployment's administrators;\n\
     --provider when it has several): open the page shown, in any browser, and confirm the\n\
     code; the provider's tokens are kept and refreshed at the provider.\n\
     \n\
     Checks that the server answers (and has --catalog, when given), then saves the profile\n\
     in profiles.toml under $PANGOLIN_CONFIG_DIR, else $XDG_CONFIG_HOME/pangolin, else\n\
     ~/.config/pangolin (mode 0600). Logging in again under the same profile name replaces\n\
     it. `pangolin logout` ends the session. Only plain http:// servers are supported yet.",
))]
pub(crate) struct LoginArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// The tenant to sign in to; leave it out for root-scope users (`root`).
    #[arg(long, env = "PANGOLIN_TENANT", value_name = "TENANT")]
    tenant: Option<String>,
    /// Sign in as this user, with a password.
    #[arg(long, env = "PANGOLIN_USER", value_name = "NAME")]
    user: Option<String>,
    /// Read the password from the first line of standard input.
    #[arg(long, requires = "user")]
    password_stdin: bool,
    /// Sign in through the tenant's identity provider (OpenID Connect device authorization).
    #[arg(long, conflicts_with_all = ["user", "token"])]
    oidc: bool,
    /// The identity provider to sign in through, when the tenant has several.
    #[arg(long, requires = "oidc", value_name = "NAME")]
    provider: Option<String>,
    /// With --oidc: sign in through an identity provider of the root scope, not a tenant's.
    #[arg(long, requires = "oidc", conflicts_with = "tenant")]
    root: bool,
    /// A bearer token sent with every request of this profile.
    #[arg(
        long,
        env = "PANGOLIN_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        conflicts_with = "user"
    )]
    token: Option<String>,
}

/// How `login` signs in.
enum Credential {
    Password { user: String, password: String },
    Oidc { provider: Option<String> },
    Bearer(String),
    None,
}

pub(crate) async fn run(args: LoginArgs) -> Result<()> {
    let server = args
        .global
        .server
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            CliError::usage(
                "login needs the server: --server http://host:port (or PANGOLIN_SERVER)",
            )
        })?;
    let server = profile::parse_server(server)?;
    let named_catalog = args.global.catalog.clone().filter(|c| !c.trim().is_empty());
    let name = args
        .global
        .profile
        .clone()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| profile::DEFAULT_PROFILE.to_owned());
    let tenant = args.tenant.clone().filter(|t| !t.trim().is_empty());
    let credential = match args.user.clone().filter(|u| !u.trim().is_empty()) {
        None if args.oidc => {
            if args
                .global
                .api_key
                .as_deref()
                .is_some_and(|k| !k.is_empty())
            {
                return Err(CliError::usage(
                    "--oidc signs in through the identity provider; leave out --api-key",
                ));
            }
            Credential::Oidc {
                provider: args.provider.clone(),
            }
        }
        Some(user) => {
            let password = secret::read(
                &format!("Password for {user}: "),
                args.password_stdin,
                "PANGOLIN_PASSWORD",
            )?;
            Credential::Password { user, password }
        }
        None => match (
            args.global.api_key.clone().filter(|k| !k.is_empty()),
            args.token.clone().filter(|t| !t.is_empty()),
        ) {
            (Some(key), _) => Credential::Bearer(key),
            (None, Some(token)) => Credential::Bearer(token),
            (None, None) => Credential::None,
        },
    };
    if tenant.is_some()
        && !matches!(
            credential,
            Credential::Password { .. } | Credential::Oidc { .. }
        )
    {
        return Err(CliError::usage(
            "--tenant names the tenant to sign in to with --user or --oidc; a token or API key \
             already says its tenant",
        ));
    }
    let mut settings = Settings {
        server: server.clone(),
        catalog: named_catalog
            .clone()
            .unwrap_or_else(|| profile::DEFAULT_CATALOG.to_owned()),
        token: None,
        refresh_token: None,
        saved_in: None,
        oidc: None,
        json: args.global.json,
    };
    let tokens = match credential {
        Credential::Password { user, password } => {
            let client = Client::new(&settings)?;
            Some(sign_in(&client, tenant.as_deref(), &user, password).await?)
        }
        Credential::Oidc { provider } => {
            let client = Client::new(&settings)?;
            let tenant = match (args.root, tenant.as_deref()) {
                (true, _) => None,
                (false, tenant) => Some(tenant.unwrap_or(profile::DEFAULT_TENANT)),
            };
            let (tokens, session) =
                crate::login_oidc::sign_in(&client, tenant, provider.as_deref()).await?;
            settings.oidc = Some(session);
            Some(tokens)
        }
        Credential::Bearer(token) => Some(Tokens {
            access: token,
            refresh: None,
        }),
        Credential::None => None,
    };
    if let Some(tokens) = &tokens {
        settings.token = Some(tokens.access.clone());
        settings.refresh_token = tokens.refresh.clone();
    }
    let client = Client::new(&settings)?;
    let checked = async {
        let principal = if tokens.is_some() {
            whoami(&client).await?
        } else {
            None
        };
        let catalog = check_catalog(&client, named_catalog.as_deref()).await?;
        Ok::<_, CliError>((principal, catalog))
    };
    let (principal, catalog) = match checked.await {
        Ok(checked) => checked,
        Err(error) => {
            if settings.oidc.is_none() && tokens.as_ref().is_some_and(|t| t.refresh.is_some()) {
                // Nothing is saved, so the fresh session would only linger on the server.
                let _ = end_session(&client).await;
            }
            if tokens.is_none() && error.exit == Exit::Auth {
                return Err(CliError::auth(
                    "this server requires sign-in: add --user NAME (and --tenant for a \
                     tenant's user), or --api-key for a service user",
                ));
            }
            return Err(error);
        }
    };
    let path = profile::file_path()?;
    let mut profiles = Profiles::load(&path)?;
    profiles.profiles.insert(
        name.clone(),
        Profile {
            server: client.server().to_owned(),
            catalog: catalog.clone(),
            token: tokens.as_ref().map(|t| t.access.clone()),
            refresh_token: tokens.and_then(|t| t.refresh),
            principal: principal.clone(),
            oidc: settings.oidc.clone(),
        },
    );
    profiles.save(&path)?;
    if args.global.json {
        let saved = json!({
            "profile": name,
            "server": client.server(),
            "catalog": catalog,
            "principal": principal,
            "file": path.display().to_string(),
        });
        print_json(&Ordered::parse(&saved.to_string())?);
    } else {
        let using = if name == profile::DEFAULT_PROFILE {
            String::new()
        } else {
            format!("; use it with --profile {name}")
        };
        let who = principal.map_or_else(String::new, |p| format!(" as {p}"));
        let which = catalog.map_or_else(
            || "no catalog chosen".to_owned(),
            |catalog| format!("catalog `{catalog}`"),
        );
        println!(
            "Logged in to {}{who} ({which}) as profile `{name}`, saved in {}{using}.",
            client.server(),
            path.display()
        );
    }
    Ok(())
}

/// `POST /api/v1/login`: the tokens, or a clear refusal.
async fn sign_in(
    client: &Client,
    tenant: Option<&str>,
    user: &str,
    password: String,
) -> Result<Tokens> {
    let mut body = json!({ "username": user, "password": password });
    if let Some(tenant) = tenant {
        body["tenant"] = Value::String(tenant.to_owned());
    }
    let request = Request::api(Method::POST, &["login"]).json(body);
    let answer = client.send_as(&request, None).await?;
    if answer.status == StatusCode::UNAUTHORIZED {
        let whom = tenant.map_or_else(|| user.to_owned(), |t| format!("{t}/{user}"));
        return Err(CliError::auth(format!(
            "sign-in refused for `{whom}`: {}",
            answer
                .error_message()
                .unwrap_or("invalid username or password")
        )));
    }
    if !answer.status.is_success() {
        return Err(status_error(&answer));
    }
    Tokens::from_answer(&answer)
}

/// `POST /api/v1/logout` with the client's tokens.
async fn end_session(client: &Client) -> Result<()> {
    let body = match client.refresh_token() {
        Some(refresh) => json!({ "refresh_token": refresh }),
        None => json!({}),
    };
    let request = Request::api(Method::POST, &["logout"]).json(body);
    client.send_as(&request, client.token().as_deref()).await?;
    Ok(())
}

/// `GET /api/v1/whoami`: the principal the credential stands for.
async fn whoami(client: &Client) -> Result<Option<String>> {
    let answer = client.call(&Request::api(Method::GET, &["whoami"])).await?;
    Ok(answer
        .body
        .get("principal")
        .and_then(Value::as_str)
        .map(str::to_owned))
}

/// The catalog the profile works in: the one named, which the server must have; else the
/// default catalog when the caller can see it, else none (a fresh tenant has no catalogs).
async fn check_catalog(client: &Client, named: Option<&str>) -> Result<Option<String>> {
    let answer = client.call(&Client::catalogs_request()).await?;
    let names: Vec<&str> = answer
        .body
        .get("catalogs")
        .and_then(Value::as_array)
        .map(|catalogs| {
            catalogs
                .iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    match named {
        Some(catalog) if !names.contains(&catalog) => Err(CliError::not_found(format!(
            "the server at {} has no catalog named `{catalog}`; it has: {}",
            client.server(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ))),
        Some(catalog) => Ok(Some(catalog.to_owned())),
        None => Ok(names
            .contains(&profile::DEFAULT_CATALOG)
            .then(|| profile::DEFAULT_CATALOG.to_owned())),
    }
}
