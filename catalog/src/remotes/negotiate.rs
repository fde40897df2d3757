//! Which commits a receiver lacks, found without walking all of history.
//!
//! Commits are painted from the wanted heads and from the heads the receiver holds, newest
//! generation first (a commit's generation is above every ancestor's, so when a commit is
//! taken every descendant that could paint it was taken before): a commit only the wanted side
//! reaches is sent; the walk stops once everything still queued is held. The trees of the
//! held commits next to the sent ones (their parents) are what the receiver is sure to hold
//! of the catalog as the sent commits changed it, so only the tree nodes beyond those are
//! sent. The cost is the commits in between and a few trees, not the catalog's history; a
//! node that only an older held commit has is sent again, which the receiver stores once.

use std::collections::{BinaryHeap, HashMap, HashSet};

use pangolin_store::{ObjectId, Odb, ReadError};

const WANT: u8 = 1;
const HAVE: u8 = 2;

/// What to send beyond what the receiver holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Boundary {
    /// The commits the receiver lacks, each before its ancestors.
    pub commits: Vec<ObjectId>,
    /// Trees of held commits that are parents of sent ones: the receiver holds all they reach.
    pub known_trees: Vec<ObjectId>,
}

#[derive(Default)]
struct Paint {
    flags: HashMap<ObjectId, u8>,
    queue: BinaryHeap<(u64, ObjectId)>,
    queued: HashSet<ObjectId>,
    /// Queued commits not painted held: the walk goes on while there are any.
    wanting: usize,
}

impl Paint {
    fn add(&mut self, id: ObjectId, generation: u64, flag: u8) {
        let flags = self.flags.entry(id).or_insert(0);
        let before = *flags;
        *flags |= flag;
        let now_held = before & HAVE == 0 && *flags & HAVE != 0;
        if self.queued.contains(&id) {
            if now_held {
                self.wanting -= 1;
            }
        } else if before == 0 {
            self.queued.insert(id);
            self.queue.push((generation, id));
            if *flags & HAVE == 0 {
                self.wanting += 1;
            }
        }
    }
}

/// The commits `wants` reach that `haves` (commits the store holds) do not, and the trees
/// the receiver holds next to them.
pub(crate) async fn boundary(
    odb: &Odb,
    wants: &[ObjectId],
    haves: &[ObjectId],
) -> Result<Boundary, ReadError> {
    let mut paint = Paint::default();
    for (ids, flag) in [(haves, HAVE), (wants, WANT)] {
        for id in ids {
            let generation = odb.commit(id).await?.generation;
            paint.add(*id, generation, flag);
        }
    }
    let mut sent = Vec::new();
    while paint.wanting > 0 {
        let Some((_, id)) = paint.queue.pop() else {
            break;
        };
        paint.queued.remove(&id);
        let flags = paint.flags.get(&id).copied().unwrap_or(0);
        let commit = odb.commit(&id).await?;
        let held = flags & HAVE != 0;
        if !held {
            paint.wanting -= 1;
            sent.push(id);
        }
        for parent in &commit.parents {
            let generation = match odb.commit(parent).await {
                Ok(parent) => parent.generation,
                // A held commit whose history is not all here (what a transfer cut short
                // left): the receiver holds that history, so nothing is lost by not walking it.
                Err(ReadError::Missing { .. }) if held => continue,
                Err(e) => return Err(e),
            };
            paint.add(*parent, generation, if held { HAVE } else { WANT });
        }
    }
    let mut known = Vec::new();
    let mut seen = HashSet::new();
    for id in &sent {
        for parent in &odb.commit(id).await?.parents {
            let held = paint.flags.get(parent).is_some_and(|f| f & HAVE != 0);
            if held && seen.insert(*parent) {
                known.push(odb.commit(parent).await?.tree);
            }
        }
    }
    Ok(Boundary {
        commits: sent,
        known_trees: known,
    })
}
