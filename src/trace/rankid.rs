//! The one rank identity: [`RankId`], where a rank file sits in the parallel layout (TP, DP,
//! PP, EP, DCP, global rank), its sort order and `process_sort_index` base as SGLang's merger
//! has them, and its label (`TP01-DP01`, `RANK03`) both ways.

/// Where a rank file sits in the parallel layout. Dimensions absent from the name are `None`.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct RankId {
    pub tp: Option<u32>,
    pub dp: Option<u32>,
    pub pp: Option<u32>,
    pub ep: Option<u32>,
    /// vLLM's decode-context-parallel rank.
    pub dcp: Option<u32>,
    /// A global rank (vLLM `rank{r}`, generic names, `distributedInfo.rank`, file order).
    pub rank: Option<u32>,
}

impl RankId {
    /// Ordering as SGLang's merger sorts files: DP, EP, PP, TP, then the global rank.
    pub fn sort_key(&self) -> (u32, u32, u32, u32, u32, u32) {
        let z = |v: Option<u32>| v.unwrap_or(0);
        (
            z(self.dp),
            z(self.ep),
            z(self.pp),
            z(self.tp),
            z(self.dcp),
            z(self.rank),
        )
    }

    /// SGLang's `process_sort_index` base: `dp*1e8 + ep*1e6 + pp*1e4 + tp*100` (a GPU adds its
    /// device pid). Without a TP rank the global rank takes its place.
    pub fn sort_index_base(&self) -> i64 {
        let z = |v: Option<u32>| i64::from(v.unwrap_or(0));
        let tp = self.tp.or(self.rank);
        z(self.dp) * 100_000_000 + z(self.ep) * 1_000_000 + z(self.pp) * 10_000 + z(tp) * 100
    }

    /// The label of this rank with every dimension it has, without brackets: `TP01-DP01`,
    /// `RANK03`. (In a group, [`super::RankFile::label`] shows only the dimensions that vary.)
    pub fn label(&self) -> String {
        strip_brackets(&label_of(self, Shown::present())).to_string()
    }

    /// Parses a label such as `TP01-DP01`, `[TP01-DP01]` or `RANK03` (the inverse of
    /// [`RankId::label`]; unknown parts are ignored).
    pub fn from_label(label: &str) -> RankId {
        let mut id = RankId::default();
        for part in strip_brackets(label).split('-') {
            let digits = part.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let key = &part[..part.len() - digits.len()];
            let v: Option<u32> = digits.parse().ok();
            match key.to_ascii_uppercase().as_str() {
                "TP" => id.tp = v,
                "DP" => id.dp = v,
                "PP" => id.pp = v,
                "EP" => id.ep = v,
                "DCP" => id.dcp = v,
                "RANK" => id.rank = v,
                _ => {}
            }
        }
        id
    }
}

pub(crate) fn strip_brackets(label: &str) -> &str {
    label.trim_start_matches('[').trim_end_matches(']')
}

/// Which dimensions a label shows.
#[derive(Clone, Copy)]
pub(crate) struct Shown {
    pub(crate) tp: bool,
    pub(crate) dp: bool,
    pub(crate) pp: bool,
    pub(crate) ep: bool,
    pub(crate) dcp: bool,
}

impl Shown {
    pub(crate) fn present() -> Self {
        Shown {
            tp: true,
            dp: true,
            pp: true,
            ep: true,
            dcp: true,
        }
    }
}

/// `[TP01-DP01]`: the dimensions `shown` that `id` has, `[RANKnn]` when none.
pub(crate) fn label_of(id: &RankId, shown: Shown) -> String {
    let mut parts = Vec::new();
    let mut add = |name: &str, v: Option<u32>, show: bool| {
        if let (Some(v), true) = (v, show) {
            parts.push(format!("{name}{v:02}"));
        }
    };
    // SGLang's order: TP, DP, PP, EP.
    add("TP", id.tp, shown.tp);
    add("DP", id.dp, shown.dp);
    add("PP", id.pp, shown.pp);
    add("EP", id.ep, shown.ep);
    add("DCP", id.dcp, shown.dcp);
    if parts.is_empty() {
        parts.push(format!("RANK{:02}", id.rank.unwrap_or(0)));
    }
    format!("[{}]", parts.join("-"))
}
