//! Partials: the read phase of some ranks ([`Read`]) saved to a file by `analyze
//! --save-partial`, and `analyze --from-partials` combining several into the reduce input.
//!
//! A partial is gzip'd JSON: a `format` name and `version`, the rankprof version that wrote
//! it, what must agree across partials (the kernel class names and the text of the rules, the
//! step marker, the profile id and stage), then the read phase: per file its [`FileInfo`],
//! notes and rank results (per-rank op aggregates, class totals, step figures and collectives,
//! with the file's base time so that the reduce can give lost-base ranks the common base).
//! Combining refuses, naming the file: a damaged or truncated file, another format or version,
//! a rank present in two partials, partials that disagree on what must agree.
//!
//! [`FileInfo`]: super::collect::plan::FileInfo

use std::collections::BTreeMap;
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::classes::Classifier;
use super::model::Analysis;
use super::options::AnalyzeOptions;
use super::phases::{self, FileRead, Read};
use crate::trace::write::writer::write_atomic_bytes;

/// The `format` field of every partial.
pub(crate) const FORMAT: &str = "rankprof-analyze-partial";
/// The partial format's version; a reader takes only its own. 2: the ranks carry the work
/// figures from shapes and message sizes and the routed MoE tokens (#9).
pub(crate) const VERSION: u32 = 2;

/// One partial file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Partial {
    pub format: String,
    pub version: u32,
    /// The version of rankprof that wrote it: the reduce takes only its own (figures may change
    /// between versions).
    pub rankprof: String,
    /// Kernel class names in column order.
    pub classes: Vec<String>,
    /// The text of the `--classes` rules file, if one was given.
    pub class_rules: Option<String>,
    /// `--step-marker`, if given.
    pub step_marker: Option<String>,
    /// The `--shard K/N` this partial holds, if one was given.
    pub shard: Option<(usize, usize)>,
    pub read: Read,
}

/// The first fields, to say why a file that is not this version's partial was refused.
#[derive(Deserialize)]
struct Head {
    format: String,
    version: u32,
    #[serde(default)]
    rankprof: String,
}

impl Partial {
    pub(crate) fn new(
        read: Read,
        classifier: &Classifier,
        class_rules: Option<String>,
        step_marker: Option<String>,
        shard: Option<(usize, usize)>,
    ) -> Partial {
        Partial {
            format: FORMAT.to_string(),
            version: VERSION,
            rankprof: env!("CARGO_PKG_VERSION").to_string(),
            classes: classifier.names().to_vec(),
            class_rules,
            step_marker,
            shard,
            read,
        }
    }

    /// The ranks it holds (unreadable ones included).
    pub(crate) fn ranks(&self) -> usize {
        self.read.files.iter().map(|f| f.info.ranks.len()).sum()
    }
}

/// The partial as gzip'd JSON.
pub(crate) fn to_bytes(p: &Partial) -> Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    serde_json::to_writer(&mut gz, p).context("cannot encode the partial")?;
    gz.flush()?;
    Ok(gz.finish()?)
}

/// Writes the partial atomically (a temporary file renamed into place); its size in bytes.
pub fn write(path: &Path, p: &Partial) -> Result<usize> {
    let bytes = to_bytes(p)?;
    write_atomic_bytes(path, &bytes)?;
    Ok(bytes.len())
}

/// Reads one partial (gzip'd or plain JSON) and checks its format and versions. Streamed: the
/// file is inflated and parsed as it is read, and the collectives go straight to their
/// bounded store ([`super::collect::collstore`]), so memory does not grow with the partial's size.
pub fn load(path: &Path) -> Result<Partial> {
    let name = path.display();
    let open = || -> Result<Box<dyn std::io::Read>> {
        let f = std::fs::File::open(path).with_context(|| format!("cannot read partial {name}"))?;
        let mut f = std::io::BufReader::with_capacity(1 << 16, f);
        let gz = f
            .fill_buf()
            .with_context(|| format!("cannot read partial {name}"))?
            .starts_with(&[0x1f, 0x8b]);
        Ok(if gz {
            Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                GzDecoder::new(f),
            ))
        } else {
            Box::new(f)
        })
    };
    let p: Partial = match serde_json::from_reader(open()?) {
        Ok(p) => p,
        Err(e) if e.is_io() => bail!("partial {name} is damaged or truncated (gzip): {e}"),
        Err(e) => {
            let why = match serde_json::from_reader::<_, Head>(open()?) {
                Ok(h) if h.format != FORMAT => format!("not a rankprof partial (format {:?})", h.format),
                Ok(h) if h.version != VERSION => format!(
                    "partial format version {} (rankprof {}); this rankprof reads version {VERSION}",
                    h.version, h.rankprof
                ),
                _ => format!("damaged or not a rankprof partial: {e}"),
            };
            bail!("partial {name}: {why}");
        }
    };
    if p.format != FORMAT {
        bail!(
            "partial {name}: not a rankprof partial (format {:?})",
            p.format
        );
    }
    if p.version != VERSION {
        bail!(
            "partial {name}: format version {}; this rankprof reads version {VERSION}",
            p.version
        );
    }
    let ours = env!("CARGO_PKG_VERSION");
    if p.rankprof != ours {
        bail!(
            "partial {name}: written by rankprof {}, this is rankprof {ours}: save the partials \
             again with this version",
            p.rankprof
        );
    }
    Ok(p)
}

/// What the reduce needs from a set of partials.
pub(crate) struct Combined {
    pub(crate) read: Read,
    pub(crate) classifier: Classifier,
}

/// Loads the partials (in parallel, `jobs` threads) and combines them into one read phase, in
/// rank order, as if one process had read every file.
pub(crate) fn combine(paths: &[PathBuf], jobs: Option<usize>) -> Result<Combined> {
    let Some(first_path) = paths.first() else {
        bail!("--from-partials needs at least one partial");
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .context("cannot start worker threads")?;
    let loaded: Vec<Result<Partial>> = pool.install(|| paths.par_iter().map(|p| load(p)).collect());
    let mut parts = Vec::with_capacity(paths.len());
    for p in loaded {
        parts.push(p?);
    }
    let first = &parts[0];
    let classifier = match &first.class_rules {
        Some(t) => Classifier::from_toml(t)
            .with_context(|| format!("partial {}: its class rules", first_path.display()))?,
        None => Classifier::default(),
    };
    if classifier.names() != first.classes.as_slice() {
        bail!(
            "partial {}: its kernel classes ({}) are not the ones its rules give here",
            first_path.display(),
            first.classes.join(", ")
        );
    }
    let mut owner: BTreeMap<String, &Path> = BTreeMap::new();
    for (p, path) in parts.iter().zip(paths) {
        agree(first, first_path, p, path)?;
        for label in p.read.files.iter().flat_map(|f| &f.info.ranks) {
            if let Some(other) = owner.insert(label.clone(), path) {
                bail!(
                    "rank {label} is in two partials: {} and {}",
                    other.display(),
                    path.display()
                );
            }
        }
    }
    let single = parts.len() == 1;
    let mut read = Read {
        profile_id: first.read.profile_id.clone(),
        stage: first.read.stage.clone(),
        plan_notes: Vec::new(),
        grid: Vec::new(),
        merged: single && first.read.merged,
        files: Vec::new(),
        snapshots: Vec::new(),
    };
    for p in parts {
        for n in p.read.plan_notes {
            if !read.plan_notes.contains(&n) {
                read.plan_notes.push(n);
            }
        }
        read.grid.extend(p.read.grid);
        read.files.extend(p.read.files);
        read.snapshots.extend(p.read.snapshots);
    }
    read.files.sort_by(FileRead::order);
    Ok(Combined { read, classifier })
}

/// `b` must agree with `a` on everything read time fixed.
fn agree(a: &Partial, a_path: &Path, b: &Partial, b_path: &Path) -> Result<()> {
    let differ = |what: &str, x: String, y: String| -> Result<()> {
        if x != y {
            bail!(
                "partials {} and {} differ in {what} ({x} and {y}): they are not parts of one analysis",
                a_path.display(),
                b_path.display()
            );
        }
        Ok(())
    };
    differ(
        "profile id",
        a.read.profile_id.clone(),
        b.read.profile_id.clone(),
    )?;
    differ(
        "stage",
        format!("{:?}", a.read.stage),
        format!("{:?}", b.read.stage),
    )?;
    differ("kernel classes", a.classes.join(","), b.classes.join(","))?;
    differ(
        "class rules",
        rules_id(a.class_rules.as_deref()),
        rules_id(b.class_rules.as_deref()),
    )?;
    differ(
        "step marker",
        format!("{:?}", a.step_marker),
        format!("{:?}", b.step_marker),
    )
}

/// A short name for a set of class rules: built-in, or the CRC-32 of the rules file's text.
fn rules_id(text: Option<&str>) -> String {
    match text {
        None => "built-in rules".into(),
        Some(t) => format!("rules file {:08x}", crc32fast::hash(t.as_bytes())),
    }
}

/// The read phase of the files `args` name (of shard `k` of `n` of them) as a partial.
pub fn read_partial(args: &AnalyzeOptions, shard: Option<(usize, usize)>) -> Result<Partial> {
    let (classifier, rules) = phases::rules(args)?;
    let read = phases::read(args, super::find(args)?, &classifier, shard)?;
    Ok(Partial::new(
        read,
        &classifier,
        rules,
        args.step_marker.clone(),
        shard,
    ))
}

/// The analysis of the ranks of every partial in `paths`: the same as one `analyze` over all
/// their files. Of `args`, only the reduce's options count (threshold, top-N, summary
/// kernels, jobs); the commands refuse the read phase's.
pub fn analyze_partials(paths: &[PathBuf], args: &AnalyzeOptions) -> Result<Analysis> {
    let c = combine(paths, args.jobs)?;
    phases::reduce(c.read, &c.classifier, args)
}
