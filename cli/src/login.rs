//! `pangolin login`: save a profile after checking the server answers.

use serde_json::{Value, json};

use crate::client::Client;
use crate::context::print_json;
use crate::error::{CliError, Result};
use crate::json::Ordered;
use crate::profile::{self, GlobalArgs, Profile, Profiles, Settings};

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &[
        "pangolin login --server http://127.0.0.1:8080",
        "pangolin login --server http://lake.internal:8080 --catalog sales --profile prod",
        "pangolin branch list --profile prod",
    ],
    "Checks that the server answers and has the catalog, then saves the profile in\n\
     profiles.toml under $PANGOLIN_CONFIG_DIR, else $XDG_CONFIG_HOME/pangolin, else\n\
     ~/.config/pangolin (mode 0600). Logging in again under the same profile name replaces\n\
     it. Only plain http:// servers are supported yet.",
))]
pub(crate) struct LoginArgs {
    #[command(flatten)]
    global: GlobalArgs,
    /// A bearer token sent with every request of this profile.
    #[arg(
        long,
        env = "PANGOLIN_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    token: Option<String>,
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
    let catalog = args
        .global
        .catalog
        .clone()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| profile::DEFAULT_CATALOG.to_owned());
    let name = args
        .global
        .profile
        .clone()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| profile::DEFAULT_PROFILE.to_owned());
    let token = args.token.filter(|t| !t.is_empty());
    let settings = Settings {
        server: server.clone(),
        catalog: catalog.clone(),
        token: token.clone(),
        json: args.global.json,
    };
    let client = Client::new(&settings)?;
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
    if !names.contains(&catalog.as_str()) {
        return Err(CliError::not_found(format!(
            "the server at {} has no catalog named `{catalog}`; it has: {}",
            server.as_str().trim_end_matches('/'),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    }
    let path = profile::file_path()?;
    let mut profiles = Profiles::load(&path)?;
    profiles.profiles.insert(
        name.clone(),
        Profile {
            server: server.as_str().trim_end_matches('/').to_owned(),
            catalog: Some(catalog.clone()),
            token,
        },
    );
    profiles.save(&path)?;
    if args.global.json {
        let saved = json!({
            "profile": name,
            "server": server.as_str().trim_end_matches('/'),
            "catalog": catalog,
            "file": path.display().to_string(),
        });
        print_json(&Ordered::parse(&saved.to_string())?);
    } else {
        let using = if name == profile::DEFAULT_PROFILE {
            String::new()
        } else {
            format!("; use it with --profile {name}")
        };
        println!(
            "Logged in to {} (catalog `{catalog}`) as profile `{name}`, saved in {}{using}.",
            server.as_str().trim_end_matches('/'),
            path.display()
        );
    }
    Ok(())
}
