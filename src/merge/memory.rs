//! Kineto's memory events (`[memory]` instants, one per allocation and free, with the running
//! `Total Allocated` in `args`) as a counter per rank and device, "memory allocated", which
//! both outputs draw as a counter track: the JSON merge adds a `"ph":"C"` event after each
//! memory instant, the `.pftrace` a counter value. The instants themselves stay.

use crate::trace::read::event::{torch_device_name, Event};
use crate::trace::read::json::Kind;

/// The counter's name; its series is the device ([`Sample::series`]).
pub(crate) const COUNTER: &str = "memory allocated";

/// One point of the counter: which device's series, and the raw JSON number of bytes.
pub(crate) struct Sample<'a> {
    /// `cpu`, `cuda:N`, … from Kineto's `Device Type` and `Device Id`.
    pub(crate) series: String,
    /// `Total Allocated` as written in the input (a JSON number).
    pub(crate) raw: &'a str,
    pub(crate) value: f64,
}

/// The memory counter point an event carries: a `[memory]` instant with a numeric
/// `Total Allocated`; `None` for every other event.
pub(crate) fn sample<'a>(ev: &Event<'a>) -> Option<Sample<'a>> {
    if !matches!(ev.ph, b'i' | b'I') || ev.ts.is_none() || !ev.name.eq_str("[memory]") {
        return None;
    }
    let total = ev.arg("Total Allocated").filter(|v| v.kind == Kind::Num)?;
    let value = total.as_f64().filter(|v| v.is_finite())?;
    let int = |k: &str| ev.arg(k).and_then(|v| v.as_i64());
    // Named as analyze names the device (`cpu`, `cuda:0`, …).
    let series = torch_device_name(
        int("Device Type").unwrap_or(0),
        int("Device Id").unwrap_or(-1),
    );
    Some(Sample {
        series,
        raw: total.text,
        value,
    })
}
