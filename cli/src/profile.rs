//! Where a client command connects: global flags, environment variables, saved profiles.
//!
//! Precedence, for each setting: the flag, its environment variable, the profile, the default.
//! Profiles live in `profiles.toml` in the configuration directory (`$PANGOLIN_CONFIG_DIR`,
//! else `$XDG_CONFIG_HOME/pangolin`, else `~/.config/pangolin`), written with mode 0600
//! because they hold tokens; a file found readable by others is made private again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::{CliError, Result};

pub(crate) const DEFAULT_SERVER: &str = "http://127.0.0.1:8080";
pub(crate) const DEFAULT_CATALOG: &str = "default";
pub(crate) const DEFAULT_PROFILE: &str = "default";
/// The tenant `login --oidc` signs in to when none is named: the one every server has.
pub(crate) const DEFAULT_TENANT: &str = "default";
const FILE_NAME: &str = "profiles.toml";

/// The flags every client command takes (also after its subcommand).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct GlobalArgs {
    /// The server's URL (plain http; https is not supported yet)
    /// [default: the profile's, else http://127.0.0.1:8080].
    #[arg(long, global = true, env = "PANGOLIN_SERVER", value_name = "URL")]
    pub(crate) server: Option<String>,
    /// The catalog to work in [default: the profile's, else `default`].
    #[arg(long, global = true, env = "PANGOLIN_CATALOG", value_name = "NAME")]
    pub(crate) catalog: Option<String>,
    /// The saved profile to use (see `pangolin login`) [default: `default`].
    #[arg(long, global = true, env = "PANGOLIN_PROFILE", value_name = "NAME")]
    pub(crate) profile: Option<String>,
    /// A service user's API key (`pgl_…`), sent instead of the profile's token.
    #[arg(
        long,
        global = true,
        env = "PANGOLIN_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub(crate) api_key: Option<String>,
    /// Print the server's JSON answer, pretty, instead of text for people.
    #[arg(long, global = true)]
    pub(crate) json: bool,
}

impl GlobalArgs {
    /// Empty values (`PANGOLIN_SERVER=`) count as unset.
    fn cleaned(&self) -> Self {
        let keep = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        Self {
            server: keep(&self.server),
            catalog: keep(&self.catalog),
            profile: keep(&self.profile),
            api_key: keep(&self.api_key),
            json: self.json,
        }
    }
}

/// One saved profile.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct Profile {
    pub(crate) server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) catalog: Option<String>,
    /// The bearer token: an access token from signing in, an API key, or one given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) token: Option<String>,
    /// Exchanged for a new token pair when the server refuses the access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// Who signed in (`user:acme/ana`), for people; the server decides from the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) principal: Option<String>,
    /// Set when the tokens came from an identity provider (`login --oidc`): they are
    /// refreshed there, not by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) oidc: Option<OidcSession>,
}

/// Where a profile's identity-provider tokens are refreshed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) struct OidcSession {
    /// The provider's issuer, for messages.
    pub(crate) issuer: String,
    pub(crate) token_endpoint: String,
    /// The public client the tokens were issued to.
    pub(crate) client_id: String,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("server", &self.server)
            .field("catalog", &self.catalog)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("principal", &self.principal)
            .field("oidc", &self.oidc)
            .finish()
    }
}

/// The profiles file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Profiles {
    #[serde(default)]
    pub(crate) profiles: BTreeMap<String, Profile>,
}

/// Where connection settings were read from and what they are.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) server: Url,
    pub(crate) catalog: String,
    pub(crate) token: Option<String>,
    /// The profile's refresh token, when its token is the one sent.
    pub(crate) refresh_token: Option<String>,
    /// The profile the tokens came from, where refreshed ones are saved.
    pub(crate) saved_in: Option<Saved>,
    /// The identity provider that refreshes the profile's tokens, if one issued them.
    pub(crate) oidc: Option<OidcSession>,
    pub(crate) json: bool,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("server", &self.server.as_str())
            .field("catalog", &self.catalog)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("saved_in", &self.saved_in)
            .field("oidc", &self.oidc)
            .field("json", &self.json)
            .finish()
    }
}

/// A profile in a profiles file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Saved {
    pub(crate) path: PathBuf,
    pub(crate) name: String,
}

impl Saved {
    /// Changes the saved profile (read afresh, so other profiles written meanwhile stay),
    /// if it still exists.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Profile)) -> Result<()> {
        let mut profiles = Profiles::load(&self.path)?;
        if let Some(profile) = profiles.profiles.get_mut(&self.name) {
            change(profile);
            profiles.save(&self.path)?;
        }
        Ok(())
    }
}

/// The configuration directory, from the environment.
pub(crate) fn config_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("PANGOLIN_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(dir).join("pangolin"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".config").join("pangolin"))
}

/// The profiles file's path.
pub(crate) fn file_path() -> Result<PathBuf> {
    config_dir().map(|dir| dir.join(FILE_NAME)).ok_or_else(|| {
        CliError::usage(
            "no configuration directory: set PANGOLIN_CONFIG_DIR, XDG_CONFIG_HOME or HOME",
        )
    })
}

impl Profiles {
    /// Reads the file; a missing file is no profiles. A file others may read is made
    /// private first, with a warning: it holds tokens.
    pub(crate) fn load(path: &Path) -> Result<Self> {
        make_private(path)?;
        match std::fs::read_to_string(path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|e| CliError::usage(format!("in {}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(CliError::usage(format!("reading {}: {e}", path.display()))),
        }
    }

    /// Writes the file whole (a new file renamed over the old one), readable by its owner
    /// only.
    pub(crate) fn save(&self, path: &Path) -> Result<()> {
        let failed = |what: &str, e: std::io::Error| {
            CliError::usage(format!("{what} {}: {e}", path.display()))
        };
        let text = toml::to_string(self)
            .map_err(|e| CliError::usage(format!("writing the profiles: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| failed("creating the directory of", e))?;
        let temporary = dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
        let written = (|| {
            let mut file = private_file(&temporary)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temporary, path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(failed("writing", e));
        }
        Ok(())
    }
}

/// Takes group and other permissions off an existing file.
#[cfg(unix)]
fn make_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = match std::fs::metadata(path) {
        Ok(metadata) => metadata.permissions().mode(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CliError::usage(format!("reading {}: {e}", path.display()))),
    };
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
            CliError::usage(format!(
                "{} is readable by others (mode {:o}) and cannot be made private: {e}",
                path.display(),
                mode & 0o777
            ))
        })?;
        eprintln!(
            "warning: {} was readable by others (mode {:o}); it holds tokens, so its mode is \
             now 600",
            path.display(),
            mode & 0o777
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_private(_path: &Path) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

/// A server URL this client can talk to: `http://host[:port][/path]`.
pub(crate) fn parse_server(text: &str) -> Result<Url> {
    let url = Url::parse(text.trim()).map_err(|e| {
        CliError::usage(format!(
            "`{text}` is not a server URL ({e}); write it as http://host:port"
        ))
    })?;
    match url.scheme() {
        "http" if url.host().is_some() => Ok(url),
        "https" => Err(CliError::usage(format!(
            "`{text}`: https is not supported yet; use an http:// URL"
        ))),
        _ => Err(CliError::usage(format!(
            "`{text}` is not a server URL; write it as http://host:port"
        ))),
    }
}

/// Combines flags and environment (already merged by clap), the profile and the defaults.
/// `token_env` is `PANGOLIN_TOKEN`. The credential sent is the API key, else
/// `PANGOLIN_TOKEN`, else the profile's token (only to the profile's own server).
pub(crate) fn resolve(
    args: &GlobalArgs,
    profiles: &Profiles,
    path: Option<&Path>,
    token_env: Option<String>,
) -> Result<Settings> {
    let args = args.cleaned();
    let profile_name = args
        .profile
        .clone()
        .unwrap_or_else(|| DEFAULT_PROFILE.to_owned());
    let profile = match &args.profile {
        Some(name) => Some(profiles.profiles.get(name).ok_or_else(|| {
            let place = path.map_or_else(String::new, |p| format!(" in {}", p.display()));
            CliError::not_found(format!(
                "there is no profile named `{name}`{place}; create it with \
                 `pangolin login --profile {name} --server URL`"
            ))
        })?),
        None => profiles.profiles.get(DEFAULT_PROFILE),
    };
    let server_text = args
        .server
        .clone()
        .or_else(|| profile.map(|p| p.server.clone()))
        .unwrap_or_else(|| DEFAULT_SERVER.to_owned());
    let server = parse_server(&server_text)?;
    let catalog = args
        .catalog
        .clone()
        .or_else(|| profile.and_then(|p| p.catalog.clone()))
        .unwrap_or_else(|| DEFAULT_CATALOG.to_owned());
    // A profile's tokens go only to the profile's own server, never to one named instead.
    let own = profile.filter(|p| parse_server(&p.server).is_ok_and(|url| url == server));
    let explicit = args.api_key.or(token_env.filter(|t| !t.is_empty()));
    let (token, refresh_token, saved_in, oidc) = match (explicit, own) {
        (Some(token), _) => (Some(token), None, None, None),
        (None, Some(profile)) => (
            profile.token.clone(),
            profile.refresh_token.clone(),
            path.map(|path| Saved {
                path: path.to_owned(),
                name: profile_name,
            }),
            profile.oidc.clone(),
        ),
        (None, None) => (None, None, None, None),
    };
    Ok(Settings {
        server,
        catalog,
        token,
        refresh_token,
        saved_in,
        oidc,
        json: args.json,
    })
}

/// The settings for a client command, from its flags, the environment and the profiles file.
pub(crate) fn settings(args: &GlobalArgs) -> Result<Settings> {
    let path = config_dir().map(|dir| dir.join(FILE_NAME));
    let profiles = match &path {
        Some(path) => Profiles::load(path)?,
        None => Profiles::default(),
    };
    resolve(
        args,
        &profiles,
        path.as_deref(),
        std::env::var("PANGOLIN_TOKEN").ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles() -> Profiles {
        let mut profiles = Profiles::default();
        profiles.profiles.insert(
            "default".into(),
            Profile {
                server: "http://profile.example:9000".into(),
                catalog: Some("lake".into()),
                token: Some("secret".into()),
                refresh_token: Some("again".into()),
                principal: Some("user:~/root".into()),
                oidc: None,
            },
        );
        profiles.profiles.insert(
            "other".into(),
            Profile {
                server: "http://other.example:9001".into(),
                ..Profile::default()
            },
        );
        profiles
    }

    fn args(server: Option<&str>, catalog: Option<&str>, profile: Option<&str>) -> GlobalArgs {
        GlobalArgs {
            server: server.map(str::to_owned),
            catalog: catalog.map(str::to_owned),
            profile: profile.map(str::to_owned),
            api_key: None,
            json: false,
        }
    }

    #[test]
    fn nothing_set_means_the_defaults() {
        let s = resolve(&args(None, None, None), &Profiles::default(), None, None).unwrap();
        assert_eq!(s.server.as_str(), "http://127.0.0.1:8080/");
        assert_eq!(s.catalog, "default");
        assert_eq!(s.token, None);
    }

    #[test]
    fn the_default_profile_wins_over_defaults_and_flags_win_over_it() {
        let s = resolve(&args(None, None, None), &profiles(), None, None).unwrap();
        assert_eq!(s.server.as_str(), "http://profile.example:9000/");
        assert_eq!(s.catalog, "lake");
        assert_eq!(s.token.as_deref(), Some("secret"));

        let s = resolve(&args(None, Some("sea"), None), &profiles(), None, None).unwrap();
        assert_eq!(s.catalog, "sea", "the flag (or its variable) wins");
        assert_eq!(s.server.as_str(), "http://profile.example:9000/");
    }

    #[test]
    fn a_token_never_goes_to_another_server_than_its_profiles() {
        let s = resolve(
            &args(Some("http://elsewhere:1"), None, None),
            &profiles(),
            None,
            None,
        )
        .unwrap();
        assert_eq!(s.token, None);
        let s = resolve(
            &args(Some("http://elsewhere:1"), None, None),
            &profiles(),
            None,
            Some("from-env".into()),
        )
        .unwrap();
        assert_eq!(
            s.token.as_deref(),
            Some("from-env"),
            "PANGOLIN_TOKEN is explicit"
        );
    }

    #[test]
    fn a_named_profile_must_exist() {
        let s = resolve(&args(None, None, Some("other")), &profiles(), None, None).unwrap();
        assert_eq!(s.server.as_str(), "http://other.example:9001/");
        assert_eq!(s.catalog, "default", "the profile has no catalog");
        let error = resolve(&args(None, None, Some("nope")), &profiles(), None, None).unwrap_err();
        assert!(error.message.contains("no profile named `nope`"), "{error}");
    }

    #[test]
    fn empty_values_count_as_unset() {
        let s = resolve(&args(Some(""), Some(" "), None), &profiles(), None, None).unwrap();
        assert_eq!(s.server.as_str(), "http://profile.example:9000/");
        assert_eq!(s.catalog, "lake");
    }

    #[test]
    fn only_plain_http_servers_are_accepted() {
        assert!(parse_server("http://localhost:8080").is_ok());
        let error = parse_server("https://example.com").unwrap_err();
        assert!(
            error.message.contains("https is not supported yet"),
            "{error}"
        );
        assert!(parse_server("localhost:8080").is_err());
        assert!(parse_server("not a url").is_err());
    }

    #[test]
    fn the_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join(FILE_NAME);
        profiles().save(&path).unwrap();
        let back = Profiles::load(&path).unwrap();
        assert_eq!(back.profiles, profiles().profiles);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(
            Profiles::load(&dir.path().join("absent.toml"))
                .unwrap()
                .profiles
                .is_empty()
        );
    }

    #[test]
    fn an_api_key_wins_and_leaves_the_profiles_refresh_token_behind() {
        let path = Path::new("/config/profiles.toml");
        let s = resolve(&args(None, None, None), &profiles(), Some(path), None).unwrap();
        assert_eq!(s.refresh_token.as_deref(), Some("again"));
        assert_eq!(
            s.saved_in,
            Some(Saved {
                path: path.to_owned(),
                name: "default".into()
            }),
            "refreshed tokens go back to the profile they came from"
        );
        let mut with_key = args(None, None, None);
        with_key.api_key = Some("pgl_key".into());
        let s = resolve(&with_key, &profiles(), Some(path), Some("from-env".into())).unwrap();
        assert_eq!(s.token.as_deref(), Some("pgl_key"));
        assert_eq!((&s.refresh_token, &s.saved_in), (&None, &None));
        let debug = format!("{s:?}");
        assert!(!debug.contains("pgl_key"), "{debug}");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_may_read_is_made_private_when_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        profiles().save(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let back = Profiles::load(&path).unwrap();
        assert_eq!(back.profiles, profiles().profiles);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn debug_output_hides_tokens() {
        let debug = format!("{:?}", profiles());
        assert!(
            !debug.contains("secret") && !debug.contains("again"),
            "{debug}"
        );
    }
}
