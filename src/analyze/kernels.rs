//! Kernels across ranks: the per-class × rank totals and the top-K kernels × rank table with
//! each kernel's imbalance (max/mean of the per-rank totals, coefficient of variation, slowest
//! rank). Also short display names for the long C++ template names kernels carry.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::collect::{Agg, OpKind};

/// One op name on one rank, name decoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NameAgg {
    pub name: String,
    pub agg: Agg,
}

/// Per-rank figures of one kernel.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KStat {
    pub total_ns: i64,
    pub count: u64,
    pub mean_ns: f64,
    pub max_ns: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelRow {
    pub name: String,
    pub short: String,
    pub class: String,
    /// `kernel`, `memcpy`, `memset` or `cpu_op`.
    pub kind: String,
    /// Over all ranks.
    pub total_ns: i64,
    pub per_rank: Vec<KStat>,
    /// Largest per-rank total over the mean per-rank total.
    pub max_over_mean: f64,
    /// Coefficient of variation of the per-rank totals (population standard deviation / mean).
    pub cv: f64,
    pub slowest: String,
}

impl KernelRow {
    /// The smallest, mean and largest per-rank total (the summarized form of `per_rank`).
    pub fn rank_min_mean_max(&self) -> (i64, i64, i64) {
        let t: Vec<i64> = self.per_rank.iter().map(|s| s.total_ns).collect();
        min_mean_max(&t)
    }
}

/// Smallest, mean (integer division) and largest value; zeros when empty.
pub fn min_mean_max(v: &[i64]) -> (i64, i64, i64) {
    (
        v.iter().copied().min().unwrap_or(0),
        v.iter().sum::<i64>() / v.len().max(1) as i64,
        v.iter().copied().max().unwrap_or(0),
    )
}

/// Class totals (sum of op durations) per rank.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ClassTable {
    pub classes: Vec<String>,
    pub ranks: Vec<String>,
    /// `ns[rank][class]`
    pub ns: Vec<Vec<i64>>,
    /// Share of the summed op time no rule classified (class `other`), percent, all ranks
    /// together ([`super::classes::other_share`]).
    #[serde(default)]
    pub unclassified_pct: f64,
    /// The same per rank, in rank order.
    #[serde(default)]
    pub unclassified_rank_pct: Vec<f64>,
}

/// The top `k` names by total time over all ranks.
pub fn top(
    ranks: &[String],
    per_rank: &[&[NameAgg]],
    class_names: &[String],
    k: usize,
) -> Vec<KernelRow> {
    let n = per_rank.len();
    let mut by_name: HashMap<&str, Vec<Option<&Agg>>> = HashMap::new();
    for (r, ops) in per_rank.iter().enumerate() {
        for op in ops.iter() {
            by_name
                .entry(op.name.as_str())
                .or_insert_with(|| vec![None; n])[r] = Some(&op.agg);
        }
    }
    let mut rows: Vec<(i64, &str, Vec<Option<&Agg>>)> = by_name
        .into_iter()
        .map(|(name, v)| (v.iter().flatten().map(|a| a.total).sum(), name, v))
        .collect();
    // Largest first; names break ties so the order never depends on hashing.
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    rows.truncate(k);
    rows.into_iter()
        .map(|(total, name, v)| {
            let first = v.iter().flatten().next().copied();
            let per_rank: Vec<KStat> = v
                .iter()
                .map(|a| match a {
                    Some(a) => KStat {
                        total_ns: a.total,
                        count: a.count,
                        mean_ns: if a.count > 0 {
                            a.total as f64 / a.count as f64
                        } else {
                            0.0
                        },
                        max_ns: a.max,
                    },
                    None => KStat::default(),
                })
                .collect();
            let totals: Vec<i64> = per_rank.iter().map(|s| s.total_ns).collect();
            let (max_over_mean, cv) = spread(&totals);
            // No slowest rank when all are equal.
            let slowest = match argmax(&totals) {
                Some(i) if max_over_mean > 1.0 => ranks[i].clone(),
                _ => "-".to_string(),
            };
            KernelRow {
                name: name.to_string(),
                short: short_name(name),
                class: first
                    .map(|a| {
                        class_names
                            .get(a.class as usize)
                            .cloned()
                            .unwrap_or_default()
                    })
                    .unwrap_or_default(),
                kind: first
                    .map_or(OpKind::Kernel, |a| a.kind)
                    .as_str()
                    .to_string(),
                total_ns: total,
                per_rank,
                max_over_mean,
                cv,
                slowest,
            }
        })
        .collect()
}

/// (max / mean, coefficient of variation) of per-rank values; (0, 0) when all are zero.
pub fn spread(v: &[i64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    if mean <= 0.0 {
        return (0.0, 0.0);
    }
    let max = v.iter().copied().max().unwrap_or(0) as f64;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (max / mean, var.sqrt() / mean)
}

/// Index of the largest value (the first one on ties).
pub fn argmax(v: &[i64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &x) in v.iter().enumerate() {
        if best.is_none_or(|b| x > v[b]) {
            best = Some(i);
        }
    }
    best
}

/// A display name: without `void ` and the parameter list; when still long, the template
/// arguments are replaced by the distinctive names inside them (functors, lambdas: not scalar
/// types, numbers or namespaces), so `vectorized_elementwise_kernel<4, AUnaryFunctor<float,
/// …, MulFunctor<float> >, …>` becomes `…vectorized_elementwise_kernel<AUnaryFunctor,
/// MulFunctor>`; cut to 70 characters.
pub fn short_name(name: &str) -> String {
    const MAX: usize = 70;
    let t = name.trim();
    let mut s = t
        .strip_prefix("void ")
        .unwrap_or(t)
        .replace("(anonymous namespace)::", "");
    if s.chars().count() > MAX {
        if let Some(p) = top_level_paren(&s) {
            s.truncate(p);
        }
    }
    if s.chars().count() > MAX {
        if let Some(p) = s.find('<') {
            let inner = &s[p + 1..];
            let mut names: Vec<&str> = Vec::new();
            let b = inner.as_bytes();
            let mut i = 0;
            while i < b.len() {
                let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
                if !ident(b[i]) {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                let tok = &inner[start..i];
                // Namespaces (followed by `::`), numbers and scalar types say little.
                let noise = inner[i..].starts_with("::")
                    || b[start].is_ascii_digit()
                    || NOISE.contains(&tok);
                if !noise && !names.contains(&tok) {
                    names.push(tok);
                }
            }
            s = format!("{}<{}>", &s[..p], names.join(", "));
        }
    }
    if s.chars().count() > MAX {
        s = s.chars().take(MAX - 1).collect::<String>() + "…";
    }
    s
}

/// Words inside template arguments that do not tell kernels apart.
const NOISE: &[&str] = &[
    "at",
    "native",
    "detail",
    "c10",
    "std",
    "cuda",
    "cutlass",
    "void",
    "const",
    "unsigned",
    "signed",
    "long",
    "int",
    "short",
    "char",
    "bool",
    "float",
    "double",
    "float2",
    "float4",
    "half",
    "Half",
    "BFloat16",
    "bfloat16",
    "__nv_bfloat16",
    "__half",
    "true",
    "false",
    "decltype",
    "nullptr",
    "Array",
    "int64_t",
    "int32_t",
    "uint32_t",
    "uint64_t",
    "int8_t",
    "uint8_t",
    "size_t",
    "unnamed",
    "type",
    "memory",
    "OffsetCalculator",
    "LoadWithoutCast",
    "StoreWithoutCast",
    "TrivialOffsetCalculator",
    "func_wrapper_t",
];

/// Byte index of the `(` that opens the parameter list (outside any template brackets).
fn top_level_paren(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth <= 0 && i > 0 => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_by_hand() {
        // totals 10, 20, 30: mean 20, max/mean 1.5, sd sqrt(200/3) = 8.165, cv 0.408
        let (m, cv) = spread(&[10, 20, 30]);
        assert!((m - 1.5).abs() < 1e-12);
        assert!((cv - (200.0f64 / 3.0).sqrt() / 20.0).abs() < 1e-12);
        assert_eq!(spread(&[0, 0]), (0.0, 0.0));
        assert_eq!(argmax(&[3, 7, 7, 1]), Some(1));
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("void foo<int>(int)"), "foo<int>(int)");
        let long = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 2>)";
        assert_eq!(
            short_name(long),
            "at::native::vectorized_elementwise_kernel<AUnaryFunctor, MulFunctor>"
        );
        let fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)";
        assert_eq!(
            short_name(fill),
            "at::native::vectorized_elementwise_kernel<FillFunctor>"
        );
        assert_eq!(
            short_name(
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
            ),
            "ncclKernel_AllReduce_RING_LL_Sum_float"
        );
    }
}
