//! The ops of one rank as the pass keeps them: what an op is ([`OpKind`]), the totals of one
//! op name ([`Agg`], and with its decoded name [`NameAgg`]), and the short display name of the
//! long C++ template names kernels carry ([`short_name`]), which the collector gives a
//! collective without a `Collective name` and the reports show.

use serde::{Deserialize, Serialize};

/// What a GPU op is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum OpKind {
    Kernel,
    Memcpy,
    Memset,
    /// A CPU op (`cpu_op`), for CPU-only traces.
    Cpu,
}

impl OpKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OpKind::Kernel => "kernel",
            OpKind::Memcpy => "memcpy",
            OpKind::Memset => "memset",
            OpKind::Cpu => "cpu_op",
        }
    }
}

/// Totals of one op name on one rank.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Agg {
    pub class: u8,
    pub kind: OpKind,
    pub total: i64,
    pub count: u64,
    pub min: i64,
    pub max: i64,
}

impl Agg {
    pub(super) fn new(class: u8, kind: OpKind) -> Self {
        Agg {
            class,
            kind,
            total: 0,
            count: 0,
            min: i64::MAX,
            max: 0,
        }
    }
    #[inline]
    pub(super) fn add(&mut self, dur: i64) {
        self.total += dur;
        self.count += 1;
        self.min = self.min.min(dur);
        self.max = self.max.max(dur);
    }
}

/// One op name on one rank, name decoded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NameAgg {
    pub name: String,
    pub agg: Agg,
}

/// A display name: without `void ` and the parameter list; when still long, the template
/// arguments are replaced by the distinctive names inside them (functors, lambdas: not scalar
/// types, numbers or namespaces), so `vectorized_elementwise_kernel<4, AUnaryFunctor<float,
/// …, MulFunctor<float> >, …>` becomes `…vectorized_elementwise_kernel<AUnaryFunctor,
/// MulFunctor>`; cut to 70 characters.
pub(crate) fn short_name(name: &str) -> String {
    const MAX: usize = 70;
    let t = name.trim();
    let mut s = t
        .strip_prefix("void ")
        .unwrap_or(t)
        .replace("(anonymous namespace)::", "");
    if s.chars().count() > MAX {
        if let Some((p, name)) = top_level(&s) {
            // The function's own name and template arguments, without a return type before
            // it (`std::enable_if<…>::type vllm::fused_add_rms_norm_kernel<…>(…)`).
            s = s[name..p].to_string();
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
/// The parameter list's `(` (the first at template and paren depth 0, not at the start) and
/// where the function's own name starts (after the last space at depth 0 before it: a return
/// type such as `std::enable_if<…, void>::type` comes first in SFINAE kernels). A `<` or `>`
/// inside parentheses is a comparison (`enable_if<(((8)>(0)))…>`), not a bracket.
fn top_level(s: &str) -> Option<(usize, usize)> {
    let mut stack: Vec<char> = Vec::new();
    let mut name_start = 0;
    for (i, c) in s.char_indices() {
        let in_paren = stack.last() == Some(&'(');
        match c {
            '(' if stack.is_empty() && i > 0 => return Some((i, name_start)),
            '(' => stack.push('('),
            ')' => {
                while let Some(top) = stack.pop() {
                    if top == '(' {
                        break;
                    }
                }
            }
            '<' if !in_paren => stack.push('<'),
            '>' if !in_paren && stack.last() == Some(&'<') => {
                stack.pop();
            }
            ' ' if stack.is_empty() => name_start = i + 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_name("void foo<int>(int)"), "foo<int>(int)");
        // vLLM's SFINAE kernels: the return type is a template too (a real name as a public
        // vLLM profile prints it, find_string "void>::type vllm::fused_add_rms_norm_kernel").
        assert_eq!(
            short_name("std::enable_if<(((8)>(0)))&&_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"),
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>"
        );
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
