//! Point-to-point transfers, paired by peer: CPU-only (gloo) traces' ops and NCCL kernels.
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
//!
//! NCCL: torch writes a send's or receive's kernel with `Collective name` `send` / `recv` and
//! the peer as `Dst Rank` / `Src Rank` (torch 2.11, NCCL 2.28: `fixtures/real-nccl/pp4-*`),
//! a rank of the kernel's process group, whose global ranks `Process Group Ranks` lists
//! (`[0, 1, 2, 3]`); [`gpu_peer`] maps it through that list when it can. The collector keys
//! the kernel as the gloo op ([`gpu_key`]), so both become the same pair key.

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

/// The collector key of an NCCL send (`send`) or receive with global peer `peer`: the gloo
/// op's ([`key`]), so that [`label`] makes it a pair key.
pub(crate) fn gpu_key(send: bool, peer: i64) -> String {
    key(if send { "c10d::send" } else { "c10d::recv_" }, peer)
}

/// An NCCL kernel's direction and global peer, from its `Dst Rank` (a send) or `Src Rank` (a
/// receive), a rank of its process group, and the group's `Process Group Ranks` (the JSON
/// text of a list of global ranks): the peer's global rank when the list holds it, else the
/// group rank as written. `None` when neither is there or both are.
pub(crate) fn gpu_peer(
    dst: Option<i64>,
    src: Option<i64>,
    ranks: Option<&str>,
) -> Option<(bool, i64)> {
    let (send, p) = match (dst, src) {
        (Some(d), None) => (true, d),
        (None, Some(s)) => (false, s),
        _ => return None,
    };
    if p < 0 {
        return None;
    }
    let global = ranks
        .and_then(|r| serde_json::from_str::<Vec<i64>>(r).ok())
        .and_then(|r| r.get(usize::try_from(p).ok()?).copied())
        .unwrap_or(p);
    Some((send, global))
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

    #[test]
    fn an_nccl_kernel_names_its_peer_as_a_rank_of_its_group() {
        // The default group: group ranks are global ranks.
        assert_eq!(
            gpu_peer(Some(1), None, Some("[0, 1, 2, 3]")),
            Some((true, 1))
        );
        assert_eq!(
            gpu_peer(None, Some(0), Some("[0, 1, 2, 3]")),
            Some((false, 0))
        );
        // A sub-group [4, 6]: its rank 1 is global rank 6.
        assert_eq!(gpu_peer(Some(1), None, Some("[4, 6]")), Some((true, 6)));
        // No list, or one that does not hold it: the rank as written.
        assert_eq!(gpu_peer(Some(5), None, None), Some((true, 5)));
        assert_eq!(gpu_peer(Some(5), None, Some("[0, 1]")), Some((true, 5)));
        // Neither, both, or a negative one: no peer.
        assert_eq!(gpu_peer(None, None, None), None);
        assert_eq!(gpu_peer(Some(1), Some(2), None), None);
        assert_eq!(gpu_peer(Some(-1), None, None), None);
        // Both ends of an NCCL transfer get the gloo one's pair key.
        assert_eq!(label(&gpu_key(true, 2), Some(1)), "p2p 1>2");
        assert_eq!(label(&gpu_key(false, 1), Some(2)), "p2p 1>2");
    }
}
