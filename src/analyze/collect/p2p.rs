//! Point-to-point transfers of CPU-only (gloo) traces, paired by peer.
//!
//! A pipeline's `c10d::send` and `c10d::recv_` share one op name on every stage, and the
//! process group is usually the default one, so matching them by name and position pairs
//! the n-th send of one stage with the n-th send of every other. Taken with `record_shapes`,
//! Kineto writes the op's scalar arguments in `args."Concrete Inputs"`: torch's schema is
//! `send(Tensor[] tensors, ProcessGroup pg, int dstRank, int tag)` and
//! `recv_(Tensor[] tensors, ProcessGroup pg, int srcRank, int tag)`, so the third entry is
//! the peer (`["", "", "2", "0"]`: to or from rank 2).
//!
//! The collector keys such an op by its name and peer ([`key`]); the rank's own
//! `distributedInfo.rank` then turns it into the transfer's **pair key** ([`label`]):
//! `p2p 1>2` on the sender (rank 1, to 2) and on the receiver (rank 2, from 1). The matcher
//! pairs them like any collective of a group of two, in order per ordered pair: the n-th send
//! from 1 to 2 with the n-th receive at 2 from 1.
//!
//! Where the trace cannot tell: without `record_shapes` there is no peer (the op keeps its
//! name and is left unmatched, as before); `recv_any_source_` names none; the peer is a rank
//! of the op's process group, which a gloo trace does not name (`distributedInfo` lists the
//! default group only), so a pipeline on a sub-group whose ranks differ from the global ones
//! pairs the wrong ranks — its counts then differ between the two ends and a note says so.

/// Separates an op's name from its peer in a collector key.
const SEP: char = '\u{1f}';

/// The prefix of a pair key (`p2p 1>2`).
pub(crate) const PAIR_PREFIX: &str = "p2p ";

/// Whether `name` is a point-to-point op (`c10d::send`, `c10d::recv_`,
/// `c10d::recv_any_source_`), and if so whether it sends.
pub(crate) fn direction(name: &str) -> Option<bool> {
    let op = name.strip_prefix("c10d::")?;
    if op.starts_with("send") {
        Some(true)
    } else if op.starts_with("recv") {
        Some(false)
    } else {
        None
    }
}

/// The peer written in a point-to-point op's `Concrete Inputs` (its JSON text): the third
/// entry, a non-negative integer in a string.
pub(crate) fn peer(concrete_inputs: &str) -> Option<i64> {
    let v: Vec<serde_json::Value> = serde_json::from_str(concrete_inputs).ok()?;
    let p = match v.get(2)? {
        serde_json::Value::String(s) => s.trim().parse::<i64>().ok()?,
        serde_json::Value::Number(n) => n.as_i64()?,
        _ => return None,
    };
    (p >= 0).then_some(p)
}

/// The collector key of a point-to-point op `name` with `peer`.
pub(crate) fn key(name: &str, peer: i64) -> String {
    format!("{name}{SEP}{peer}")
}

/// The label of a CPU collector key on the rank whose `distributedInfo.rank` is `own`: a
/// point-to-point op with a peer becomes its pair key (`p2p src>dst`); without `own`, or for
/// any other key, the op's name.
pub(crate) fn label(key: &str, own: Option<i64>) -> String {
    let Some((name, peer)) = key.split_once(SEP) else {
        return key.to_string();
    };
    match (own, direction(name), peer.parse::<i64>()) {
        (Some(me), Some(true), Ok(p)) => format!("{PAIR_PREFIX}{me}>{p}"),
        (Some(me), Some(false), Ok(p)) => format!("{PAIR_PREFIX}{p}>{me}"),
        _ => name.to_string(),
    }
}

/// Whether a label is a pair key.
pub(crate) fn is_pair(label: &str) -> bool {
    label.starts_with(PAIR_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_is_the_third_concrete_input() {
        assert_eq!(peer(r#"["", "", "2", "0"]"#), Some(2));
        assert_eq!(peer(r#"["", "", 3, 0]"#), Some(3));
        assert_eq!(peer(r#"["", ""]"#), None);
        assert_eq!(peer(r#"["", "", "", "0"]"#), None);
        assert_eq!(peer(r#"["", "", "-1", "0"]"#), None);
        assert_eq!(peer("not json"), None);
    }

    #[test]
    fn both_ends_of_a_transfer_get_one_pair_key() {
        let send = label(&key("c10d::send", 2), Some(1));
        let recv = label(&key("c10d::recv_", 1), Some(2));
        assert_eq!(send, "p2p 1>2");
        assert_eq!(send, recv);
        // The backward transfer is another pair.
        assert_eq!(label(&key("c10d::send", 1), Some(2)), "p2p 2>1");
        // Without the rank's own number, or for a collective, the op's name.
        assert_eq!(label(&key("c10d::send", 2), None), "c10d::send");
        assert_eq!(label("c10d::allreduce_", Some(0)), "c10d::allreduce_");
        assert!(is_pair(&send) && !is_pair("c10d::send"));
        assert_eq!(direction("c10d::recv_any_source_"), Some(false));
        assert_eq!(direction("c10d::allreduce_"), None);
    }
}
