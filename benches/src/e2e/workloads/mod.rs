//! The workloads: what each one does, on how many connections in which phase, and how to run
//! one against a server.

mod reads;
mod versioning;
mod writes;

use std::sync::atomic::{AtomicU64, Ordering};

use super::driver::Timing;
use super::options::Phase;
use super::stats::Figures;

/// One workload and its connection counts per phase (empty: not part of that phase).
#[derive(Debug)]
pub struct Def {
    pub name: &'static str,
    pub what: &'static str,
    pub workloads: &'static [usize],
    pub scaling: &'static [usize],
    pub history: &'static [usize],
}

impl Def {
    pub fn connections(&self, phase: Phase) -> &'static [usize] {
        match phase {
            Phase::Workloads => self.workloads,
            Phase::Scaling => self.scaling,
            Phase::History => self.history,
        }
    }
}

/// Every workload, in the order a phase runs them: reads first (they leave `main` as it is),
/// then writes.
pub const DEFS: &[Def] = &[
    Def {
        name: "load-hot",
        what: "loadTable of one table on main",
        workloads: &[16, 32],
        scaling: &[16],
        history: &[],
    },
    Def {
        name: "load-appended",
        what: "loadTable of a table 110 appends old (10 snapshots, 100 metadata-log entries)",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "load-branch",
        what: "loadTable of one table on another branch (`hot@read-N`)",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "load-at-hash",
        what: "loadTable at an old commit of main (`hot@main%23<hash>`)",
        workloads: &[16],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "load-at-time",
        what: "loadTable at a past time of main (`hot@main%23<RFC 3339>`)",
        workloads: &[16],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "load-back",
        what: "loadTable n commits back (`hot@main~n`)",
        workloads: &[],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "list-namespaces",
        what: "list the top-level namespaces",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "list-tables",
        what: "first page (100) of the tables of one namespace",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "log-paging",
        what: "one log page (100 commits) per request, following page tokens down the history",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "log-page-deep",
        what: "the oldest full log page (100 commits, from `main~(depth-100)`)",
        workloads: &[],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "events-page-first",
        what: "the first page of change events (100, from the oldest kept)",
        workloads: &[],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "events-page-deep",
        what: "a page of the newest 100 change events, after a cursor deep in the ref log",
        workloads: &[],
        scaling: &[],
        history: &[16],
    },
    Def {
        name: "ui-log-page",
        what: "the web UI's log page of main (100 commits, rendered), one reader",
        workloads: &[],
        scaling: &[],
        history: &[1],
    },
    Def {
        name: "ui-log-page-deep",
        what: "the web UI's oldest full log page (100 commits from `main~(depth-100)`), one reader",
        workloads: &[],
        scaling: &[],
        history: &[1],
    },
    Def {
        name: "diff",
        what: "diff of main and a branch that changed 10 tables",
        workloads: &[16],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "commit-1",
        what: "append a snapshot to one table, one writer",
        workloads: &[1],
        scaling: &[1],
        history: &[],
    },
    Def {
        name: "commit-8-tables",
        what: "append snapshots, 8 writers on 8 tables of main",
        workloads: &[8],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "commit-8-one-table",
        what: "append snapshots, 8 writers on one table (409: reload, retry)",
        workloads: &[8],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "create-table",
        what: "create a table in one namespace, one writer and eight",
        workloads: &[1, 8],
        scaling: &[],
        history: &[],
    },
    Def {
        name: "create-branch",
        what: "create a branch from main (management API)",
        workloads: &[1],
        scaling: &[1],
        history: &[],
    },
    Def {
        name: "merge-10",
        what: "merge a branch that changed 10 tables into a main that moved",
        workloads: &[1],
        scaling: &[1],
        history: &[],
    },
    Def {
        name: "merge-100",
        what: "merge a branch that changed 100 tables into a main that moved",
        workloads: &[1],
        scaling: &[],
        history: &[],
    },
];

/// The workloads as a Markdown table: name, connections per phase, what it does.
pub fn describe() -> String {
    let counts = |c: &[usize]| {
        c.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text =
        "| workload | workloads | scaling | history | what |\n|---|---|---|---|---|\n".to_owned();
    for d in DEFS {
        text.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            d.name,
            counts(d.workloads),
            counts(d.scaling),
            counts(d.history),
            d.what
        ));
    }
    text
}

pub fn find(name: &str) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name == name)
}

/// What a workload runs against.
#[derive(Debug, Clone)]
pub struct Env {
    /// The servers, `http://127.0.0.1:port` (several: replicas sharing one database).
    pub bases: Vec<String>,
    pub timing: Timing,
    /// Bulk tables in the catalog.
    pub tables: u64,
    /// Commits of history the loader wrote.
    pub depth: u64,
    /// How far back the reads of old states go (`main~back`, and that commit's hash and time).
    pub back: u64,
}

/// The outcome of one workload at one connection count.
#[derive(Debug)]
pub struct Sample {
    pub figures: Figures,
    /// For commits and creates: acknowledged ones the catalog does not show (0 expected).
    pub lost: Option<i64>,
}

/// Names that no other run of this process used (branches, tables).
pub(crate) fn unique() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Runs workload `name` on `connections` connections.
pub async fn run(name: &str, connections: usize, env: &Env) -> anyhow::Result<Sample> {
    let plain = |figures| Sample {
        figures,
        lost: None,
    };
    Ok(match name {
        "log-paging" => plain(versioning::log_paging(env, connections).await?),
        "commit-1" => writes::commits(env, connections, writes::Tables::One).await?,
        "commit-8-tables" => writes::commits(env, connections, writes::Tables::PerWriter).await?,
        "commit-8-one-table" => writes::commits(env, connections, writes::Tables::Shared).await?,
        "create-table" => writes::create_tables(env, connections).await?,
        "create-branch" => plain(versioning::create_branches(env, connections).await?),
        "merge-10" => plain(versioning::merges(env, connections, 10).await?),
        "merge-100" => plain(versioning::merges(env, connections, 100).await?),
        read => plain(reads::reads(read, env, connections).await?),
    })
}
