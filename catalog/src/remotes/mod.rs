//! Remotes: other Pangolin servers' catalogs this catalog exchanges history with, the way git
//! repositories do.
//!
//! A remote is a record naming a server and a catalog there, with the branches and tags that
//! catalog had when it was last fetched (its tracking refs). Objects move as bundles
//! ([`crate::bundle`]): a sender is told which commits the receiver holds and leaves out
//! everything they reach ([`Catalog::plan_pack`]); a receiver checks every object by its hash
//! as it arrives and moves nothing until the whole pack is in and complete
//! ([`Catalog::fetch_receiver`], [`Catalog::push_receiver`]). A fetch then records the remote's refs on its record; a push
//! moves one branch by compare-and-swap from the head the pusher saw, refusing anything but
//! a fast-forward unless forced.
//!
//! The client in between (the command line) holds the credentials of both servers, so each
//! server authorizes its own side: reading to send, writing to receive. Table files are not
//! moved: metadata locations are kept as they are.
//!
//! ```text
//! remotes/<tenant>/<catalog>/<remote>     a remote and its tracking refs
//! ```

mod negotiate;
mod pack;
mod receive;
mod record;

pub use pack::{MAX_HAVES, PackError};
pub use receive::{
    FetchReceiver, Fetched, PushError, PushReceiver, PushRequest, Pushed, ReceiveError,
    TrackingChange,
};
pub use record::{AddRemoteError, MAX_REMOTES, NewRemote, Remote, RemoteError};
pub(crate) use record::{delete_all, kept_heads, tracking_heads};
