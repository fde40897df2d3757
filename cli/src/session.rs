//! `pangolin whoami` and `pangolin logout`: the signed-in session.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::{Request, status_error};
use crate::context::Context;
use crate::error::Result;
use crate::profile::GlobalArgs;

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin whoami", "pangolin whoami --profile acme --json"],
    "Shows the principal the server sees for the profile's token (or --api-key), the tenant\n\
     it acts in, and whether it is root or a tenant administrator.",
))]
pub(crate) struct WhoamiArgs {
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Debug, clap::Args)]
#[command(after_help = crate::help::after(
    &["pangolin logout", "pangolin logout --profile acme"],
    "Revokes the profile's access and refresh tokens on the server and removes them from the\n\
     profile (its server and catalog stay). An API key is only forgotten: an administrator\n\
     revokes keys (`pangolin admin key revoke`); an identity provider's tokens are forgotten\n\
     (the provider keeps its own session). Logging out when not signed in succeeds.",
))]
pub(crate) struct LogoutArgs {
    #[command(flatten)]
    global: GlobalArgs,
}

pub(crate) async fn whoami(args: WhoamiArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let answer = ctx
        .client
        .call(&Request::api(Method::GET, &["whoami"]))
        .await?;
    if ctx.json {
        return ctx.print_answer(&answer);
    }
    let text = |name: &str| answer.body.get(name).and_then(Value::as_str).unwrap_or("?");
    let flag = |name: &str| answer.body.get(name).and_then(Value::as_bool) == Some(true);
    let role = if flag("root") {
        ", root"
    } else if flag("admin") {
        ", tenant administrator"
    } else {
        ""
    };
    println!(
        "{} on {}, acting in tenant `{}`{role}",
        text("principal"),
        ctx.client.server(),
        text("acting-tenant")
    );
    Ok(())
}

pub(crate) async fn logout(args: LogoutArgs) -> Result<()> {
    let ctx = Context::new(&args.global)?;
    let client = &ctx.client;
    let Some(token) = client.token() else {
        return report(&ctx, false, "Not signed in; nothing to log out of.");
    };
    let saved_in = client.saved_in();
    // The server cannot revoke an identity provider's tokens; they are forgotten here.
    let provider = client.oidc_issuer();
    if !token.starts_with("pgl_") && provider.is_none() {
        let request = |refresh: Option<String>| {
            Request::api(Method::POST, &["logout"]).json(match refresh {
                Some(refresh) => json!({ "refresh_token": refresh }),
                None => json!({}),
            })
        };
        let mut answer = client
            .send_as(&request(client.refresh_token()), Some(&token))
            .await?;
        // An expired access token cannot log itself out; a fresh pair can revoke both.
        if answer.status == StatusCode::UNAUTHORIZED
            && let Some(fresh) = client.refresh().await?
        {
            answer = client
                .send_as(&request(client.refresh_token()), Some(&fresh))
                .await?;
        }
        // Refused: the tokens are dead already, which is what logging out wants.
        if !answer.status.is_success() && answer.status != StatusCode::UNAUTHORIZED {
            return Err(status_error(&answer));
        }
    }
    let Some(saved) = saved_in else {
        return report(
            &ctx,
            true,
            "The token came from --api-key or PANGOLIN_TOKEN; there was nothing saved to forget.",
        );
    };
    saved.update(|p| {
        p.token = None;
        p.refresh_token = None;
        p.principal = None;
        p.oidc = None;
    })?;
    let provider = provider.map_or_else(String::new, |issuer| {
        format!(
            " (the tokens of {issuer} are forgotten; the provider ends its own session: sign \
             out there too on a shared machine)"
        )
    });
    report(
        &ctx,
        true,
        &format!(
            "Logged out of {}; profile `{}` keeps no token{provider}.",
            client.server(),
            saved.name
        ),
    )
}

fn report(ctx: &Context, logged_out: bool, text: &str) -> Result<()> {
    if ctx.json {
        let body = json!({ "logged-out": logged_out, "server": ctx.client.server() });
        crate::context::print_json(&crate::json::Ordered::parse(&body.to_string())?);
    } else {
        println!("{text}");
    }
    Ok(())
}
