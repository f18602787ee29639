//! The Prometheus text exposition format (what SGLang's and vLLM's `GET /metrics` serve), read
//! robustly: `# HELP` / `# TYPE` / other comments, blank lines, `name value`, `name{l="v",…}
//! value [timestamp]`, label values with `\\`, `\"` and `\n` escapes (and `,` `}` `=` inside
//! quotes), `NaN`, `+Inf`, `-Inf`, exponents. A line that does not parse is skipped and counted,
//! never an error: a server's odd line must not hide the gauges around it.
//!
//! Only samples whose metric name the caller wants are kept, so a large `/metrics` page
//! (vLLM's histograms have hundreds of buckets) costs one pass and few allocations.

/// One sample: metric name, labels in page order, value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) value: f64,
}

impl Sample {
    /// The value of label `key`.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What [`parse`] found.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Page {
    pub(crate) samples: Vec<Sample>,
    /// Lines that were neither comments nor valid samples.
    pub(crate) bad_lines: usize,
}

/// Parses a `/metrics` page, keeping the samples whose name `keep` accepts.
pub(crate) fn parse(text: &str, keep: impl Fn(&str) -> bool) -> Page {
    let mut page = Page::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        if !valid_name(name) {
            page.bad_lines += 1;
            continue;
        }
        if !keep(name) {
            continue;
        }
        match sample(name, &line[name_end..]) {
            Some(s) => page.samples.push(s),
            None => page.bad_lines += 1,
        }
    }
    page
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// The rest of a sample line after its name: `{labels} value [timestamp]` or ` value …`.
fn sample(name: &str, rest: &str) -> Option<Sample> {
    let (labels, rest) = match rest.strip_prefix('{') {
        Some(inner) => labels(inner)?,
        None => (Vec::new(), rest),
    };
    let mut fields = rest.split_ascii_whitespace();
    let value = number(fields.next()?)?;
    // An optional integer timestamp (ms); anything more is not a sample line.
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// `a="x",b="y\"z"} rest` → the labels and `rest`.
fn labels(s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Some((out, after));
        }
        let eq = rest.find('=')?;
        let key = rest[..eq].trim();
        if !valid_name(key) {
            return None;
        }
        let after_eq = rest[eq + 1..].trim_start();
        let quoted = after_eq.strip_prefix('"')?;
        let (value, used) = unquote(quoted)?;
        out.push((key.to_string(), value));
        rest = quoted[used..].trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r.trim_start();
        } else if !rest.starts_with('}') {
            return None;
        }
    }
}

/// Reads a label value up to its closing quote; returns it and the bytes used (quote included).
fn unquote(s: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1)),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// A sample value: a float, `NaN`, `+Inf`, `-Inf`, `Inf`.
fn number(s: &str) -> Option<f64> {
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Page {
        parse(text, |_| true)
    }

    #[test]
    fn comments_labels_and_plain_samples() {
        let p = all(concat!(
            "# HELP sglang:num_running_reqs The number of running requests.\n",
            "# TYPE sglang:num_running_reqs gauge\n",
            "sglang:num_running_reqs{dp_rank=\"1\",engine_type=\"unified\",model_name=\"m\",tp_rank=\"0\"} 12.0\n",
            "\n",
            "process_open_fds 31\n",
            "up{job=\"x\"} 1 1700000000000\n",
        ));
        assert_eq!(p.bad_lines, 0);
        assert_eq!(p.samples.len(), 3);
        assert_eq!(p.samples[0].name, "sglang:num_running_reqs");
        assert_eq!(p.samples[0].label("dp_rank"), Some("1"));
        assert_eq!(p.samples[0].label("tp_rank"), Some("0"));
        assert_eq!(p.samples[0].value, 12.0);
        assert_eq!(p.samples[1].value, 31.0);
        assert!(p.samples[1].labels.is_empty());
        assert_eq!(p.samples[2].value, 1.0);
    }

    #[test]
    fn escaped_quotes_and_separators_inside_label_values() {
        let p = all(concat!(
            "vllm:num_requests_waiting{model_name=\"a \\\"quoted\\\" {model}, v=2\",engine=\"0\"} 7\n",
            "x{path=\"C:\\\\dir\",note=\"line\\nbreak\",} 2.5e3\n",
        ));
        assert_eq!(p.bad_lines, 0, "{p:?}");
        assert_eq!(
            p.samples[0].label("model_name"),
            Some("a \"quoted\" {model}, v=2")
        );
        assert_eq!(p.samples[0].label("engine"), Some("0"));
        assert_eq!(p.samples[0].value, 7.0);
        assert_eq!(p.samples[1].label("path"), Some("C:\\dir"));
        assert_eq!(p.samples[1].label("note"), Some("line\nbreak"));
        assert_eq!(p.samples[1].value, 2500.0);
    }

    #[test]
    fn special_values() {
        let p = all("a NaN\nb +Inf\nc -Inf\nd 1e-3\n");
        assert!(p.samples[0].value.is_nan());
        assert_eq!(p.samples[1].value, f64::INFINITY);
        assert_eq!(p.samples[2].value, f64::NEG_INFINITY);
        assert_eq!(p.samples[3].value, 0.001);
    }

    #[test]
    fn bad_lines_are_counted_not_fatal() {
        let p = all(concat!(
            "good 1\n",
            "broken{a=\"unterminated} 1\n",
            "novalue{a=\"b\"}\n",
            "1bad 2\n",
            "words here too many 3\n",
            "x{a=b} 1\n",
            "also_good{a=\"\"} 4\n",
        ));
        assert_eq!(p.samples.len(), 2, "{p:?}");
        assert_eq!(p.bad_lines, 5);
        assert_eq!(p.samples[1].label("a"), Some(""));
    }

    #[test]
    fn keep_filters_by_name_before_parsing_labels() {
        let p = parse("a{x=\"1\"} 1\nb{broken 2\nc 3\n", |n| n != "b");
        assert_eq!(p.samples.len(), 2);
        assert_eq!(p.bad_lines, 0);
    }
}
