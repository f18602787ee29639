//! Which servers to profile: a router's `GET /workers` (legacy `GET /list_workers`), urls given
//! by hand, or the router address found in a training log ([`super::fromlog`]).
//!
//! Routers list *workers*, not servers: with `--dp-aware` a TP2×DP2 server appears as
//! `http://h:p@0` and `http://h:p@1`. Profiling is started once per server, so urls are
//! normalised (scheme added, trailing `/` and the `@N` suffix removed) and de-duplicated here,
//! keeping the DP ranks seen. Unhealthy workers and unwanted worker types are dropped with a note.
//!
//! (Over ~500 lines: one concept (finding the workers) with its many answer shapes and their tests.)

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use super::fromlog::router_from_log;
use super::http::Http;
use super::options::{seconds, Targets, WorkerType};

/// One server to profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Worker {
    /// Base url, `http://host:port`, without `@N` and trailing `/`.
    pub url: String,
    /// `regular`, `prefill` or `decode`, when the router says.
    pub worker_type: Option<String>,
    /// As the router reports it (`None`: not reported).
    pub healthy: Option<bool>,
    /// DP ranks the router listed as separate `url@N` workers (empty when not DP-aware).
    pub dp_ranks: Vec<u32>,
}

/// The servers found, the router they came from, and what was dropped on the way.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub workers: Vec<Worker>,
    pub router: Option<String>,
    pub notes: Vec<String>,
}

/// One entry as a router lists it, before de-duplication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub url: String,
    pub worker_type: Option<String>,
    pub healthy: Option<bool>,
}

/// `http://h:p@N/` → (`http://h:p`, `Some(N)`); adds `http://` to a bare `host:port`.
pub(crate) fn normalize_url(raw: &str) -> Result<(String, Option<u32>)> {
    let s = raw.trim();
    if s.is_empty() {
        bail!("empty worker url");
    }
    let mut url = if s.contains("://") {
        s.to_string()
    } else {
        format!("http://{s}")
    };
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let trim = |u: &mut String| {
        while u.len() > scheme_end && u.ends_with('/') {
            u.pop();
        }
    };
    trim(&mut url);
    let mut dp = None;
    if let Some(at) = url.rfind('@') {
        let tail = &url[at + 1..];
        if at > scheme_end && !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            dp = tail.parse().ok();
            url.truncate(at);
            trim(&mut url);
        }
    }
    if url.len() <= scheme_end {
        bail!("worker url {raw:?} has no host");
    }
    Ok((url, dp))
}

fn str_field<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

/// `"regular"`, or serde's externally tagged `{"Prefill": {"bootstrap_port": …}}`.
fn worker_type_of(v: &Value) -> Option<String> {
    let t = v.get("worker_type").or_else(|| v.get("type"))?;
    match t {
        Value::String(s) => Some(s.to_ascii_lowercase()),
        Value::Object(m) => m.keys().next().map(|k| k.to_ascii_lowercase()),
        _ => None,
    }
}

fn listed_of(v: &Value, ty: Option<&str>) -> Option<Listed> {
    // An empty or blank url is no url.
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(Listed {
            url: s.clone(),
            worker_type: ty.map(str::to_string),
            healthy: None,
        }),
        Value::Object(_) => Some(Listed {
            url: str_field(v, &["url", "worker_url"])
                .filter(|u| !u.trim().is_empty())?
                .to_string(),
            worker_type: worker_type_of(v).or_else(|| ty.map(str::to_string)),
            healthy: v
                .get("is_healthy")
                .or_else(|| v.get("healthy"))
                .and_then(Value::as_bool),
        }),
        _ => None,
    }
}

/// Reads a router's answer: sgl-model-gateway / sglang-router `{"workers":[{url, worker_type,
/// is_healthy, …}], "total", "stats"}`, vllm-router's same shape, a list of url strings under
/// `workers`, legacy `/list_workers` `{"urls":[…]}`, PD lists `{"prefill":[…],"decode":[…]}`,
/// or a bare array.
pub fn parse_workers_answer(body: &str) -> Result<Vec<Listed>> {
    let v: Value = serde_json::from_str(body).context("the answer is not JSON")?;
    let mut out = Vec::new();
    let mut push_all = |arr: &Value, ty: Option<&str>, what: &str| -> Result<()> {
        let Some(items) = arr.as_array() else {
            bail!("`{what}` is not a list");
        };
        for (i, item) in items.iter().enumerate() {
            match listed_of(item, ty) {
                Some(l) => out.push(l),
                None => bail!(
                    "`{what}[{i}]` has no url: {}",
                    excerpt(&item.to_string(), 120)
                ),
            }
        }
        Ok(())
    };
    match &v {
        Value::Array(_) => push_all(&v, None, "answer")?,
        Value::Object(m) => {
            let mut known = false;
            for (key, ty) in [
                ("workers", None),
                ("urls", None),
                ("prefill", Some("prefill")),
                ("prefill_urls", Some("prefill")),
                ("decode", Some("decode")),
                ("decode_urls", Some("decode")),
            ] {
                if let Some(arr) = m.get(key) {
                    known = true;
                    push_all(arr, ty, key)?;
                }
            }
            if !known {
                let keys: Vec<&str> = m.keys().map(String::as_str).collect();
                bail!("no worker list in the answer (keys: {})", keys.join(", "));
            }
        }
        _ => bail!("unexpected answer: {}", excerpt(body, 120)),
    }
    Ok(out)
}

/// Merges `url@N` entries into one worker per server, in first-seen order.
pub fn dedupe(listed: Vec<Listed>) -> Result<(Vec<Worker>, Vec<String>)> {
    let mut workers: Vec<Worker> = Vec::new();
    let mut health: Vec<(usize, usize)> = Vec::new(); // (healthy entries, unhealthy entries)
    for l in listed {
        let (url, dp) = normalize_url(&l.url)?;
        let idx = match workers.iter().position(|w| w.url == url) {
            Some(i) => i,
            None => {
                workers.push(Worker {
                    url,
                    worker_type: None,
                    healthy: None,
                    dp_ranks: Vec::new(),
                });
                health.push((0, 0));
                workers.len() - 1
            }
        };
        let w = &mut workers[idx];
        if w.worker_type.is_none() {
            w.worker_type = l.worker_type;
        }
        if let Some(d) = dp {
            if !w.dp_ranks.contains(&d) {
                w.dp_ranks.push(d);
            }
        }
        match l.healthy {
            Some(true) => health[idx].0 += 1,
            Some(false) => health[idx].1 += 1,
            None => {}
        }
    }
    let mut notes = Vec::new();
    for (w, (good, bad)) in workers.iter_mut().zip(health) {
        w.dp_ranks.sort_unstable();
        w.healthy = match (good, bad) {
            (0, 0) => None,
            (0, _) => Some(false),
            (_, 0) => Some(true),
            (g, b) => {
                notes.push(format!(
                    "{}: {b} of {} DP workers unhealthy; profiling the server anyway",
                    w.url,
                    g + b
                ));
                Some(true)
            }
        };
    }
    Ok((workers, notes))
}

/// Drops unhealthy workers and those of other types (a worker of unknown type counts as
/// `regular`), with a note for each.
pub(crate) fn select(workers: Vec<Worker>, types: &[WorkerType]) -> (Vec<Worker>, Vec<String>) {
    let wanted: BTreeSet<&str> = types
        .iter()
        .map(|t| match t {
            WorkerType::Prefill => "prefill",
            WorkerType::Decode => "decode",
            WorkerType::Regular => "regular",
        })
        .collect();
    let mut notes = Vec::new();
    let mut kept = Vec::new();
    for w in workers {
        let ty = w.worker_type.as_deref().unwrap_or("regular");
        if !wanted.is_empty() && !wanted.contains(ty) {
            notes.push(format!("skipped {}: worker type {ty}", w.url));
        } else if w.healthy == Some(false) {
            notes.push(format!(
                "skipped {}: the router reports it unhealthy",
                w.url
            ));
        } else {
            kept.push(w);
        }
    }
    (kept, notes)
}

/// Asks a router for its workers: `GET /workers`, and `GET /list_workers` when that is missing.
pub(crate) fn ask_router(http: &Http, router: &str, timeout: Duration) -> Result<Vec<Listed>> {
    let mut tried = Vec::new();
    for path in ["/workers", "/list_workers"] {
        let url = format!("{router}{path}");
        let a = http.get(&url, timeout);
        if let (Some(_), Some(hint)) = (a.status, a.failure_hint()) {
            bail!("cannot read the worker list from {url}: {hint}");
        }
        match (a.status, &a.failure) {
            (Some(200..=299), _) => {
                return parse_workers_answer(&a.body)
                    .with_context(|| format!("cannot read the worker list from {url}"));
            }
            (Some(code @ (401 | 403)), _) => bail!("{}", http.refused(router, code)),
            (Some(code), _) => tried.push(format!("{path}: HTTP {code}")),
            (None, Some(f)) => {
                bail!("cannot reach the router at {router}: {}", f.hint())
            }
            (None, None) => tried.push(format!("{path}: no answer")),
        }
    }
    bail!(
        "{router} did not list its workers ({}); is it a router?",
        tried.join(", ")
    )
}

/// Resolves `--router-url` / `--from-log` / `--worker-url` into the servers to call.
pub fn resolve(http: &Http, t: &Targets) -> Result<Found> {
    let timeout = seconds(t.timeout);
    let mut found = Found::default();
    let mut listed = Vec::new();
    let mut router = match &t.router_url {
        Some(u) => Some(normalize_url(u)?.0),
        None => None,
    };
    if let Some(log) = &t.from_log {
        match router_from_log(log)? {
            Some(u) => {
                if router.is_none() {
                    found
                        .notes
                        .push(format!("router {u} (from {})", log.display()));
                    router = Some(u);
                } else {
                    found.notes.push(format!(
                        "ignored router {u} in {}: --router-url given",
                        log.display()
                    ));
                }
            }
            None => bail!(
                "no `Router launched at HOST:PORT` line in {}",
                log.display()
            ),
        }
    }
    if router.is_none() && t.worker_urls.is_empty() {
        bail!("no workers: give --router-url URL, --worker-url URL… or --from-log FILE");
    }
    if let Some(r) = &router {
        listed.extend(ask_router(http, r, timeout)?);
    }
    for u in &t.worker_urls {
        listed.push(Listed {
            url: u.clone(),
            worker_type: None,
            healthy: None,
        });
    }
    let (workers, notes) = dedupe(listed)?;
    found.notes.extend(notes);
    let (workers, notes) = select(workers, &t.worker_type);
    found.notes.extend(notes);
    if workers.is_empty() {
        let from = router.as_deref().unwrap_or("the given urls");
        bail!(
            "no workers to profile from {from}{}",
            joined_notes(&found.notes)
        );
    }
    found.workers = workers;
    found.router = router;
    Ok(found)
}

fn joined_notes(notes: &[String]) -> String {
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    }
}

/// The first `max` characters of `s`, on one line.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        one
    } else {
        let cut: String = one.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// True for a url on this machine (localhost, 127.x, ::1).
pub(crate) fn is_loopback(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let host = if let Some(h) = rest.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        rest.split([':', '/']).next().unwrap_or("")
    };
    host == "localhost" || host.starts_with("127.") || host == "::1"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures/router")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn urls_are_normalised() {
        assert_eq!(
            normalize_url("http://127.0.0.1:30014@1").unwrap(),
            ("http://127.0.0.1:30014".into(), Some(1))
        );
        assert_eq!(
            normalize_url("10.0.0.2:8000/").unwrap(),
            ("http://10.0.0.2:8000".into(), None)
        );
        assert_eq!(
            normalize_url("http://[::1]:8000@12").unwrap(),
            ("http://[::1]:8000".into(), Some(12))
        );
        // user@host is not a DP suffix
        assert_eq!(
            normalize_url("http://me@host:1").unwrap(),
            ("http://me@host:1".into(), None)
        );
        assert!(normalize_url("http://").is_err());
        assert!(normalize_url("  ").is_err());
    }

    #[test]
    fn real_router_answer_two_plain_workers() {
        let listed = parse_workers_answer(&fixture("router_workers_fake.json")).unwrap();
        let (w, notes) = dedupe(listed).unwrap();
        assert!(notes.is_empty());
        let urls: Vec<&str> = w.iter().map(|w| w.url.as_str()).collect();
        assert_eq!(urls, ["http://127.0.0.1:30001", "http://127.0.0.1:30002"]);
        assert!(w
            .iter()
            .all(|w| w.worker_type.as_deref() == Some("regular") && w.healthy == Some(true)));
    }

    #[test]
    fn real_dp_aware_answer_is_one_server() {
        let listed =
            parse_workers_answer(&fixture("router_workers_real_tp2dp2_dpaware.json")).unwrap();
        assert_eq!(listed.len(), 2);
        let (w, _) = dedupe(listed).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].url, "http://127.0.0.1:30014");
        assert_eq!(w[0].dp_ranks, [0, 1]);
    }

    #[test]
    fn legacy_and_variant_shapes() {
        let l = parse_workers_answer(r#"{"urls":["http://a:1","http://b:2@0","http://b:2@1"]}"#)
            .unwrap();
        let (w, _) = dedupe(l).unwrap();
        assert_eq!(w.len(), 2);
        let l = parse_workers_answer(
            r#"{"workers":[{"url":"http://p:1","worker_type":{"Prefill":{"bootstrap_port":9000}},"is_healthy":true},
                           {"url":"http://d:1","worker_type":"decode","is_healthy":false}],"total":2}"#,
        )
        .unwrap();
        assert_eq!(l[0].worker_type.as_deref(), Some("prefill"));
        assert_eq!(l[1].healthy, Some(false));
        let l =
            parse_workers_answer(r#"{"prefill":["http://p:1"],"decode":["http://d:1"]}"#).unwrap();
        assert_eq!(l[1].worker_type.as_deref(), Some("decode"));
        let l = parse_workers_answer(r#"{"workers":["http://x:1"]}"#).unwrap();
        assert_eq!(l[0].url, "http://x:1");
        assert!(parse_workers_answer(r#"{"models":[]}"#).is_err());
        assert!(parse_workers_answer(r#"{"workers":[{"id":"no-url"}]}"#).is_err());
        assert!(parse_workers_answer("<html>").is_err());
    }

    #[test]
    fn selection_drops_unhealthy_and_other_types() {
        let mk = |u: &str, t: &str, h: bool| Worker {
            url: u.into(),
            worker_type: Some(t.into()),
            healthy: Some(h),
            dp_ranks: vec![],
        };
        let ws = vec![
            mk("http://p:1", "prefill", true),
            mk("http://d:1", "decode", true),
            mk("http://d:2", "decode", false),
        ];
        let (kept, notes) = select(ws.clone(), &[WorkerType::Decode]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].url, "http://d:1");
        assert_eq!(notes.len(), 2);
        assert!(notes
            .iter()
            .any(|n| n.contains("http://d:2") && n.contains("unhealthy")));
        let (kept, _) = select(ws, &[]);
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn half_unhealthy_dp_server_is_kept_with_a_note() {
        let l = vec![
            Listed {
                url: "http://h:1@0".into(),
                worker_type: None,
                healthy: Some(true),
            },
            Listed {
                url: "http://h:1@1".into(),
                worker_type: None,
                healthy: Some(false),
            },
        ];
        let (w, notes) = dedupe(l).unwrap();
        assert_eq!(w[0].healthy, Some(true));
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:1"));
        assert!(is_loopback("http://localhost:1"));
        assert!(is_loopback("http://[::1]:1"));
        assert!(!is_loopback("http://10.0.0.1:1"));
    }
}
