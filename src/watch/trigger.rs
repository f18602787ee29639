//! The trigger grammar of `rankprof watch --trigger`, and its evaluation poll by poll.
//!
//! ```text
//! TRIGGER   := METRIC AGG OP THRESHOLD [ "for" DURATION ]
//! METRIC    := running | waiting | tokens | token_usage | throughput
//!              (also usage, queue, and SGLang's field names num_running_reqs, num_waiting_reqs,
//!               num_used_tokens, gen_throughput)
//! AGG       := max/mean | spread | cv | max | min | mean        over the DP ranks of one poll
//! OP        := > | >= | < | <=
//! THRESHOLD := a number (1.5, 32, 1e3), or a percentage (90% = 0.9)
//! DURATION  := a number and a unit: 500ms, 10s, 1.5m, 1h
//! ```
//!
//! `max/mean` is the largest rank over the mean of all ranks (1 when all are 0), `spread` the
//! largest minus the smallest, `cv` the standard deviation over the mean. Ranks are every DP
//! rank of every worker that answered the poll. With `for DURATION` the condition must hold on
//! every poll for that long: it fires on the first poll at least DURATION after the first poll
//! of an unbroken run of polls that met it; a poll that does not meet it (or where no rank
//! answered) starts over. Without `for` it fires on the first poll that meets it. Errors name
//! the column: `at column 9: unknown aggregate "sprad"`.

use std::fmt;

use serde::Serialize;

use crate::load::loads::{Metric, RankLoad};
use crate::load::stats::{Agg, Spread};
use crate::trace::Ns;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    pub fn holds(self, v: f64, threshold: f64) -> bool {
        match self {
            Op::Gt => v > threshold,
            Op::Ge => v >= threshold,
            Op::Lt => v < threshold,
            Op::Le => v <= threshold,
        }
    }
}

/// A parsed trigger.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    pub metric: Metric,
    pub agg: Agg,
    pub op: Op,
    pub threshold: f64,
    /// How long the condition must hold (0: one poll).
    pub hold_ns: Ns,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}",
            self.metric.name(),
            self.agg.name(),
            self.op.name(),
            self.threshold
        )?;
        if self.hold_ns > Ns::ZERO {
            write!(f, " for {}", duration_text(self.hold_ns.get()))?;
        }
        Ok(())
    }
}

fn duration_text(ns: i64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{}s", ns / 1_000_000_000)
    } else {
        format!("{}ms", ns as f64 / 1e6)
    }
}

/// A parse error: the 1-based column (in characters) and what was wrong.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParseError {
    pub(crate) input: String,
    pub(crate) column: usize,
    pub(crate) message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "trigger {:?}: at column {}: {}\n  {}\n  {}^",
            self.input,
            self.column,
            self.message,
            self.input,
            " ".repeat(self.column.saturating_sub(1))
        )
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Num(f64),
    Slash,
    Percent,
    Op(Op),
    End,
}

impl Tok {
    fn shown(&self) -> String {
        match self {
            Tok::Word(w) => format!("{w:?}"),
            Tok::Num(n) => format!("{n}"),
            Tok::Slash => "\"/\"".into(),
            Tok::Percent => "\"%\"".into(),
            Tok::Op(o) => format!("{:?}", o.name()),
            Tok::End => "the end".into(),
        }
    }
}

/// Tokens with their 1-based columns; `Err` at a character no token starts with.
fn tokens(s: &str) -> Result<Vec<(usize, Tok)>, (usize, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let col = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((col, Tok::Word(chars[start..i].iter().collect())));
        } else if c.is_ascii_digit() || c == '.' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            // An exponent, but not the start of a unit such as `ms` or `s`.
            if i + 1 < chars.len()
                && (chars[i] == 'e' || chars[i] == 'E')
                && (chars[i + 1].is_ascii_digit()
                    || (matches!(chars[i + 1], '+' | '-')
                        && chars.get(i + 2).is_some_and(char::is_ascii_digit)))
            {
                i += 2;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text: String = chars[start..i].iter().collect();
            let n = text
                .parse::<f64>()
                .map_err(|_| (col, format!("{text:?} is not a number")))?;
            out.push((col, Tok::Num(n)));
        } else {
            let next_eq = chars.get(i + 1) == Some(&'=');
            let (tok, len) = match c {
                '/' => (Tok::Slash, 1),
                '%' => (Tok::Percent, 1),
                '>' if next_eq => (Tok::Op(Op::Ge), 2),
                '<' if next_eq => (Tok::Op(Op::Le), 2),
                '>' => (Tok::Op(Op::Gt), 1),
                '<' => (Tok::Op(Op::Lt), 1),
                _ => return Err((col, format!("unexpected character {c:?}"))),
            };
            out.push((col, tok));
            i += len;
        }
    }
    out.push((chars.len() + 1, Tok::End));
    Ok(out)
}

struct Parser {
    toks: Vec<(usize, Tok)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &(usize, Tok) {
        &self.toks[self.at.min(self.toks.len() - 1)]
    }
    fn next(&mut self) -> (usize, Tok) {
        let t = self.peek().clone();
        self.at += 1;
        t
    }
}

const METRICS: &str = "running, waiting, tokens, token_usage or throughput";
const AGGS: &str = "max/mean, spread, cv, max, min or mean";

/// Parses one trigger (see the module doc for the grammar).
pub(crate) fn parse(input: &str) -> Result<Trigger, ParseError> {
    let err = |column: usize, message: String| ParseError {
        input: input.to_string(),
        column,
        message,
    };
    let toks = tokens(input).map_err(|(c, m)| err(c, m))?;
    let mut p = Parser { toks, at: 0 };

    let metric = match p.next() {
        (c, Tok::Word(w)) => Metric::from_name(&w)
            .ok_or_else(|| err(c, format!("unknown metric {w:?} (expected {METRICS})")))?,
        (c, t) => {
            return Err(err(
                c,
                format!("expected a metric ({METRICS}), found {}", t.shown()),
            ))
        }
    };
    let agg = match p.next() {
        (c, Tok::Word(w)) => match w.to_ascii_lowercase().as_str() {
            "max" if p.peek().1 == Tok::Slash => {
                p.next();
                match p.next() {
                    (_, Tok::Word(m)) if m.eq_ignore_ascii_case("mean") => Agg::MaxOverMean,
                    (c, t) => {
                        return Err(err(
                            c,
                            format!("expected \"mean\" after \"max/\", found {}", t.shown()),
                        ))
                    }
                }
            }
            "spread" => Agg::Spread,
            "cv" => Agg::Cv,
            "max" => Agg::Max,
            "min" => Agg::Min,
            "mean" | "avg" => Agg::Mean,
            _ => return Err(err(c, format!("unknown aggregate {w:?} (expected {AGGS})"))),
        },
        (c, t) => {
            return Err(err(
                c,
                format!("expected an aggregate ({AGGS}), found {}", t.shown()),
            ))
        }
    };
    let op = match p.next() {
        (_, Tok::Op(o)) => o,
        (c, t) => {
            return Err(err(
                c,
                format!("expected >, >=, < or <=, found {}", t.shown()),
            ))
        }
    };
    let mut threshold = match p.next() {
        (_, Tok::Num(n)) => n,
        (c, t) => {
            return Err(err(
                c,
                format!("expected a threshold (a number), found {}", t.shown()),
            ))
        }
    };
    if p.peek().1 == Tok::Percent {
        p.next();
        threshold /= 100.0;
    }
    let mut hold_ns = 0;
    match p.next() {
        (_, Tok::End) => {}
        (_, Tok::Word(w)) if w.eq_ignore_ascii_case("for") => {
            hold_ns = duration(&mut p).map_err(|(c, m)| err(c, m))?;
            let (c, t) = p.next();
            if t != Tok::End {
                return Err(err(
                    c,
                    format!("unexpected {} after the duration", t.shown()),
                ));
            }
        }
        (c, t) => {
            return Err(err(
                c,
                format!("expected \"for DURATION\" or the end, found {}", t.shown()),
            ))
        }
    }
    Ok(Trigger {
        metric,
        agg,
        op,
        threshold,
        hold_ns: Ns::new(hold_ns),
    })
}

/// `10s`, `500ms`, `1.5m`, `1h`, `10 s`.
fn duration(p: &mut Parser) -> Result<i64, (usize, String)> {
    let (c, n) = match p.next() {
        (c, Tok::Num(n)) => (c, n),
        (c, t) => {
            return Err((
                c,
                format!(
                    "expected a duration like 10s, 500ms or 2m, found {}",
                    t.shown()
                ),
            ))
        }
    };
    let unit_ns = match p.next() {
        (_, Tok::Word(u)) => match u.as_str() {
            "ms" => 1e6,
            "s" | "sec" | "secs" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            _ => return Err((c, format!("unknown unit {u:?} (expected ms, s, m or h)"))),
        },
        (_, t) => {
            return Err((
                c,
                format!(
                    "the duration {n} needs a unit (ms, s, m or h), found {}",
                    t.shown()
                ),
            ))
        }
    };
    let ns = n * unit_ns;
    if !(0.0..=1e18).contains(&ns) {
        return Err((c, format!("duration {n} out of range")));
    }
    Ok(ns.round() as i64)
}

/// A trigger being watched: how long its condition has held.
#[derive(Clone, Debug)]
pub struct Armed {
    pub trigger: Trigger,
    /// Time of the first poll of the current unbroken run that met the condition.
    since: Option<i64>,
    /// The aggregate at the last poll (`None`: no rank reported the metric).
    pub last: Option<f64>,
}

/// A trigger that fired.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fired {
    pub trigger: String,
    pub value: f64,
    /// Poll time when it fired, Unix time.
    pub t_ns: Ns,
    /// How long the condition had held.
    pub held_ns: Ns,
}

impl Armed {
    pub fn new(trigger: Trigger) -> Armed {
        Armed {
            trigger,
            since: None,
            last: None,
        }
    }

    /// Looks at one poll (taken at `t_ns`); `Some` when the trigger fires now.
    pub fn observe<'a>(
        &mut self,
        t_ns: i64,
        ranks: impl Iterator<Item = &'a RankLoad>,
    ) -> Option<Fired> {
        let t = &self.trigger;
        self.last = Spread::of_metric(ranks, t.metric).map(|s| s.get(t.agg));
        let Some(v) = self.last.filter(|v| t.op.holds(*v, t.threshold)) else {
            self.since = None;
            return None;
        };
        let since = *self.since.get_or_insert(t_ns);
        let held_ns = t_ns - since;
        (held_ns >= t.hold_ns.get()).then(|| Fired {
            trigger: t.to_string(),
            value: v,
            t_ns: Ns::new(t_ns),
            held_ns: Ns::new(held_ns),
        })
    }

    /// Forgets the current run (after a capture: the condition must hold anew).
    pub fn reset(&mut self) {
        self.since = None;
    }

    /// How long the condition has held as of `now_ns` (`None`: it does not hold).
    pub fn holding_ns(&self, now_ns: i64) -> Option<i64> {
        self.since.map(|s| now_ns - s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar_examples() {
        let t = parse("token_usage max/mean > 1.5 for 10s").unwrap();
        assert_eq!(
            t,
            Trigger {
                metric: Metric::TokenUsage,
                agg: Agg::MaxOverMean,
                op: Op::Gt,
                threshold: 1.5,
                hold_ns: Ns::new(10_000_000_000)
            }
        );
        assert_eq!(t.to_string(), "token_usage max/mean > 1.5 for 10s");
        let t = parse("waiting spread > 32").unwrap();
        assert_eq!(
            (t.metric, t.agg, t.hold_ns.get()),
            (Metric::Waiting, Agg::Spread, 0)
        );
        let t = parse("  running  max / mean>=2 for 500ms ").unwrap();
        assert_eq!(
            (t.agg, t.op, t.hold_ns.get()),
            (Agg::MaxOverMean, Op::Ge, 500_000_000)
        );
        assert_eq!(
            parse("tokens cv <= 0.25 for 2m").unwrap().hold_ns.get(),
            120_000_000_000
        );
        assert_eq!(parse("usage max > 90%").unwrap().threshold, 0.9);
        assert_eq!(
            parse("throughput min < 1e3 for 1.5 s").unwrap().threshold,
            1000.0
        );
        assert_eq!(
            parse("num_waiting_reqs mean < 4").unwrap().metric,
            Metric::Waiting
        );
        assert_eq!(
            parse("waiting spread > 3 for 1h").unwrap().hold_ns.get(),
            3_600_000_000_000
        );
    }

    fn col(s: &str) -> (usize, String) {
        let e = parse(s).unwrap_err();
        (e.column, e.message)
    }

    #[test]
    fn errors_name_the_column() {
        assert_eq!(col("wating spread > 3").0, 1);
        assert!(col("wating spread > 3")
            .1
            .contains("unknown metric \"wating\""));
        let (c, m) = col("waiting sprad > 3");
        assert_eq!(c, 9);
        assert!(m.contains("unknown aggregate"), "{m}");
        assert_eq!(col("waiting max/median > 3").0, 13);
        assert_eq!(col("waiting spread = 3").0, 16);
        assert_eq!(col("waiting spread > x").0, 18);
        let (c, m) = col("waiting spread > 3 for 10");
        assert_eq!(c, 24);
        assert!(m.contains("needs a unit"), "{m}");
        assert_eq!(col("waiting spread > 3 for 10 days").0, 24);
        assert_eq!(col("waiting spread > 3 during 10s").0, 20);
        assert_eq!(col("waiting spread > 3 for 10s and more").0, 28);
        assert_eq!(col("waiting spread > 3 for").0, 23);
        assert_eq!(col("").0, 1);
        assert_eq!(col("waiting spread > 3 ; rm").0, 20);
        assert_eq!(col("waiting spread > 1.2.3").0, 18);
        let shown = parse("waiting sprad > 3").unwrap_err().to_string();
        assert!(
            shown.contains("at column 9") && shown.ends_with("        ^"),
            "{shown}"
        );
    }

    fn ranks(waiting: &[f64]) -> Vec<RankLoad> {
        waiting
            .iter()
            .enumerate()
            .map(|(i, w)| RankLoad {
                dp: i as u32,
                waiting: Some(*w),
                ..RankLoad::default()
            })
            .collect()
    }

    #[test]
    fn hold_means_every_poll_for_that_long() {
        let s = 1_000_000_000i64;
        let mut a = Armed::new(parse("waiting spread > 10 for 2s").unwrap());
        let high = ranks(&[0.0, 20.0]);
        let low = ranks(&[5.0, 6.0]);
        assert!(a.observe(0, high.iter()).is_none());
        assert!(a.observe(s, high.iter()).is_none());
        assert_eq!(a.holding_ns(s), Some(s));
        // one poll below: the run starts over
        assert!(a.observe(2 * s, low.iter()).is_none());
        assert_eq!(a.holding_ns(2 * s), None);
        assert!(a.observe(3 * s, high.iter()).is_none());
        assert!(a.observe(4 * s, high.iter()).is_none());
        let f = a.observe(5 * s, high.iter()).expect("fires after 2 s");
        assert_eq!(
            (f.t_ns.get(), f.held_ns.get(), f.value),
            (5 * s, 2 * s, 20.0)
        );
        a.reset();
        assert!(a.observe(6 * s, high.iter()).is_none());
        // no rank answered: does not hold
        assert!(a.observe(7 * s, ranks(&[]).iter()).is_none());
        assert_eq!(a.last, None);
    }

    #[test]
    fn without_hold_the_first_poll_fires() {
        let mut a = Armed::new(parse("waiting max/mean >= 2").unwrap());
        assert!(a.observe(0, ranks(&[1.0, 2.0]).iter()).is_none());
        let f = a.observe(1, ranks(&[0.0, 4.0]).iter()).unwrap();
        assert_eq!(f.value, 2.0);
        assert_eq!(f.held_ns.get(), 0);
    }
}
