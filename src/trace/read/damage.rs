//! What reading one trace file found: its [`Header`] (the top-level keys other than
//! `traceEvents`), and the [`ReadReport`] — events delivered and rejected, the [`Problem`]s with
//! single events, the [`Damage`] that stopped reading early, raw control bytes and trailing
//! garbage, each at its byte offset. The reader ([`super::reader`]) fills them in; the
//! header's keys it reads through [`key_value`], the counts through [`ReadReport::reject`] and
//! [`ReadReport::raw_control`].

use std::fmt;
use std::path::{Path, PathBuf};

use super::escape;
use super::header_json;
pub use super::header_json::{Device, Distributed};
use super::json;
use super::stop::Stop;

/// Top-level keys of a trace other than `traceEvents`. Values are kept as raw JSON text.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// `true` for `{"traceEvents": …}`, `false` for a bare array.
    pub object_form: bool,
    pub schema_version: Option<i64>,
    /// Kineto's `baseTimeNanoseconds`: event `ts` are relative to it when present.
    pub base_time_ns: Option<i64>,
    pub display_time_unit: Option<String>,
    /// Raw JSON of `deviceProperties` (an array).
    pub device_properties: Option<String>,
    /// Raw JSON of `distributedInfo`.
    pub distributed_info: Option<String>,
    /// Every other key with its raw JSON value, in input order.
    pub other: Vec<(String, String)>,
    /// Set by [`super::reader::read_head`]: the event array is empty or does not start with
    /// a JSON object (`[]`, `[1, 2]`: a JSON array that is no trace).
    pub no_events: bool,
}

impl Header {
    /// `distributedInfo.rank`, if present.
    pub fn distributed_rank(&self) -> Option<i64> {
        self.distributed().rank
    }
    /// `distributedInfo.world_size`, if present.
    pub fn world_size(&self) -> Option<i64> {
        self.distributed().world_size
    }
    /// `distributedInfo`'s `rank` and `world_size`, read in one parse.
    pub fn distributed(&self) -> Distributed {
        self.distributed_info
            .as_deref()
            .map_or_else(Distributed::default, header_json::distributed)
    }
    /// Whether `deviceProperties` lists a device (is an array with something in it).
    pub fn lists_devices(&self) -> bool {
        self.device_properties.as_deref().is_some_and(|raw| {
            let mut b = raw.bytes().filter(|c| !c.is_ascii_whitespace());
            b.next() == Some(b'[') && b.next().is_some_and(|c| c != b']')
        })
    }
    /// Device names from `deviceProperties`.
    pub fn device_names(&self) -> Vec<String> {
        self.devices().into_iter().filter_map(|d| d.name).collect()
    }
    /// Each entry of `deviceProperties` that is an object: its `id` and `name` where they are
    /// an integer and a string.
    pub fn devices(&self) -> Vec<Device> {
        self.device_properties
            .as_deref()
            .map_or_else(Vec::new, header_json::devices)
    }
}

/// A problem found while reading, at a byte offset of the decompressed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub offset: u64,
    pub msg: String,
}

/// How reading a file went.
#[derive(Debug, Clone)]
pub struct ReadReport {
    pub path: PathBuf,
    pub header: Header,
    /// Events read, whether handed to the callback or not.
    pub events: u64,
    /// Events not handed over only because the header lists a device
    /// ([`super::want::Pick::Narrowed`]).
    pub narrowed: u64,
    /// Whether the header keys before the events list a device ([`Header::lists_devices`]):
    /// what a [`super::want::Want`]'s name test was told.
    pub devices: bool,
    /// Events skipped because they were invalid (wrong types, missing fields, bad UTF-8).
    pub rejected: u64,
    /// The first problems with single events (at most [`MAX_PROBLEMS`]).
    pub problems: Vec<Problem>,
    /// Where reading had to stop early, if it did.
    pub damage: Option<Damage>,
    /// Decompressed bytes read.
    pub bytes: u64,
    pub gzip: bool,
    /// Events (and header values) holding raw control bytes (U+0000–U+001F) inside strings,
    /// which JSON forbids. They are read as written, not rejected: nothing is lost.
    pub raw_control: u64,
    /// Decompressed offset of the first such byte.
    pub first_raw_control: Option<u64>,
    /// `(compressed offset, length)` of bytes after the last gzip member that are not a gzip
    /// member. Every member before them was verified, so this is a note, not damage.
    pub trailing_garbage: Option<(u64, u64)>,
    /// What a reader of another format said of the file (an Nsight Systems export's version,
    /// the clock its times are on, [`super::nsys`]): the first of [`ReadReport::notes`].
    pub said: Vec<String>,
}

pub(crate) const MAX_PROBLEMS: usize = 20;

/// Why reading stopped before the end of the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// The data ends inside the document.
    Truncated { at: u64 },
    /// The JSON is invalid at this offset.
    InvalidJson { at: u64, msg: String },
    /// The gzip stream is broken (not merely cut short).
    Gzip { at: u64, msg: String },
    /// A whole JSON document without `traceEvents`: not a trace at all.
    NotATrace,
}

/// What [`ReadReport::stopped_early`] says of a file that is not a trace (the start of it).
pub(crate) const NOT_A_TRACE: &str = "not a trace";

impl Damage {
    pub fn offset(&self) -> u64 {
        match self {
            Damage::Truncated { at } | Damage::InvalidJson { at, .. } | Damage::Gzip { at, .. } => {
                *at
            }
            Damage::NotATrace => 0,
        }
    }
}

impl ReadReport {
    pub(super) fn new(path: &Path, gzip: bool) -> Self {
        ReadReport {
            path: path.to_path_buf(),
            header: Header::default(),
            events: 0,
            narrowed: 0,
            devices: false,
            rejected: 0,
            problems: Vec::new(),
            damage: None,
            bytes: 0,
            gzip,
            raw_control: 0,
            first_raw_control: None,
            trailing_garbage: None,
            said: Vec::new(),
        }
    }

    /// True when anything was lost: reading stopped early or an event was rejected.
    pub fn is_damaged(&self) -> bool {
        self.damage.is_some() || self.rejected > 0
    }

    /// Why reading stopped before the end of the document, when it did, and how many events
    /// came before: `truncated at byte 762507, 2560 events read before` (what `analyze` and
    /// the merged trace's `ranks` list give as `stopped_early`).
    pub fn stopped_early(&self) -> Option<String> {
        let what = match self.damage.as_ref()? {
            Damage::Truncated { at } => format!("truncated at byte {at}"),
            Damage::InvalidJson { at, .. } => format!("invalid JSON at byte {at}"),
            Damage::Gzip { at, .. } => format!("a broken gzip stream after byte {at}"),
            Damage::NotATrace => {
                return Some(format!(
                    "{NOT_A_TRACE}: a JSON document without traceEvents"
                ))
            }
        };
        Some(format!("{what}, {} events read before", self.events))
    }

    /// One line per problem, each naming the file and byte offset.
    pub fn notes(&self) -> Vec<String> {
        let file = self.path.display();
        let mut out = self.said.clone();
        if let Some(d) = &self.damage {
            out.push(match d {
                Damage::Truncated { at } => format!(
                    "salvaged {} events; {file} is truncated at byte {at}",
                    self.events
                ),
                Damage::InvalidJson { at, msg } => format!(
                    "salvaged {} events; {file} has invalid JSON at byte {at}: {msg}",
                    self.events
                ),
                Damage::Gzip { at, msg } => format!(
                    "salvaged {} events; {file} has a broken gzip stream after byte {at}: {msg}",
                    self.events
                ),
                Damage::NotATrace => format!(
                    "{file} is {NOT_A_TRACE}: a JSON document without traceEvents; its rank is \
                     left out"
                ),
            });
        }
        for p in &self.problems {
            out.push(format!(
                "{file}: skipped an event at byte {}: {}",
                p.offset, p.msg
            ));
        }
        if self.rejected as usize > self.problems.len() {
            out.push(format!(
                "{file}: skipped {} more invalid events",
                self.rejected as usize - self.problems.len()
            ));
        }
        if let Some(at) = self.first_raw_control {
            out.push(format!(
                "{file}: {} events or header values hold raw control characters (U+0000-U+001F) \
                 inside strings, which JSON forbids (first at byte {at}); kept, and escaped as \\u00XX \
                 when written",
                self.raw_control
            ));
        }
        if let Some((at, len)) = self.trailing_garbage {
            out.push(format!(
                "{file}: {len} bytes of trailing garbage after the last gzip member at offset {at} \
                 (compressed); ignored, every member before it checked out"
            ));
        }
        out
    }
}

impl ReadReport {
    /// Counts a value holding raw control bytes; `raw` starts at decompressed offset `at`.
    pub(super) fn raw_control(&mut self, at: u64, raw: &[u8]) {
        self.raw_control += 1;
        if self.first_raw_control.is_none() {
            self.first_raw_control = Some(at + escape::first_ctl(raw).unwrap_or(0) as u64);
        }
    }

    /// Counts an event turned away, and names it while fewer than [`MAX_PROBLEMS`] are.
    pub(super) fn reject(&mut self, offset: u64, msg: String) {
        self.rejected += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { offset, msg });
        }
    }
}

/// Parses a top-level `"key": value` at `b[i]` into `report`'s [`Header`]; the index after it,
/// whether it opened the `traceEvents` array (then it stops after the `[`), and whether the
/// key or value held raw control bytes (the value is stored escaped).
pub(super) fn key_value(
    b: &[u8],
    i: usize,
    report: &mut ReadReport,
) -> Result<(usize, bool, bool), Stop> {
    let header = &mut report.header;
    let mut ctl = false;
    let (kend, escaped) = json::scan_string_ctl(b, i, &mut ctl)?;
    let key_raw = std::str::from_utf8(&b[i + 1..kend - 1])
        .map_err(|_| Stop::Invalid(i, "invalid UTF-8 in a key"))?;
    let key = if escaped {
        escape::unescape(key_raw)
    } else {
        key_raw.to_string()
    };
    let mut j = json::skip_ws(b, kend);
    match b.get(j) {
        None => return Err(Stop::Incomplete),
        Some(b':') => j = json::skip_ws(b, j + 1),
        Some(_) => return Err(Stop::Invalid(j, "expected ':'")),
    }
    if j >= b.len() {
        return Err(Stop::Incomplete);
    }
    if key == "traceEvents" {
        return if b[j] == b'[' {
            Ok((j + 1, true, ctl))
        } else {
            Err(Stop::Invalid(j, "\"traceEvents\" is not an array"))
        };
    }
    let (vend, kind) = json::skip_value_ctl(b, j, &mut ctl)?;
    let mut raw = std::str::from_utf8(&b[j..vend])
        .map_err(|e| Stop::Invalid(j + e.valid_up_to(), "invalid UTF-8"))?
        .to_string();
    if ctl {
        let mut esc = Vec::with_capacity(raw.len() + 16);
        escape::escape_ctl(raw.as_bytes(), &mut esc);
        // Escaping only replaces ASCII bytes: still valid UTF-8.
        raw = String::from_utf8(esc).unwrap_or(raw);
    }
    match key.as_str() {
        "schemaVersion" => header.schema_version = raw.parse().ok(),
        "baseTimeNanoseconds" => {
            header.base_time_ns = Some(
                raw.parse()
                    .map_err(|_| Stop::Invalid(j, "baseTimeNanoseconds is not a 64-bit integer"))?,
            )
        }
        "displayTimeUnit" => {
            header.display_time_unit = match kind {
                json::Kind::Str { .. } => Some(raw.trim_matches('"').to_string()),
                _ => None,
            }
        }
        "deviceProperties" => header.device_properties = Some(raw),
        "distributedInfo" => header.distributed_info = Some(raw),
        _ => header.other.push((key, raw)),
    }
    Ok((vend, false, ctl))
}

impl fmt::Display for ReadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} events", self.path.display(), self.events)?;
        for n in self.notes() {
            write!(f, "\n  {n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Header;

    #[test]
    fn lists_devices_when_device_properties_holds_something() {
        let with = |raw: Option<&str>| Header {
            device_properties: raw.map(str::to_string),
            ..Header::default()
        };
        for (raw, want) in [
            (None, false),
            (Some("[]"), false),
            (Some("[\n  ]"), false),
            (Some("{}"), false),
            (Some("null"), false),
            (Some("[{\"id\": 0}]"), true),
            (Some(" [ {} ]"), true),
        ] {
            assert_eq!(with(raw).lists_devices(), want, "{raw:?}");
        }
    }
}
