//! Where each rank sits in the parallel layout, and the names that follow from it.
//!
//! Global rank `r = (d * pp + p) * tp + t` (TP fastest, then PP, then DP). EP splits each TP
//! group as SGLang does: `ep` must divide `tp` and the EP rank is `t / (tp / ep)`.
//!
//! Each DP replica is its own torch world (as SGLang and vLLM run DP): `distributedInfo.rank` is
//! the rank inside the replica, `p * tp + t`, and `world_size` is `tp * pp`, so with DP > 1 two
//! files report the same rank and only the file name tells them apart. The replica's process
//! groups are: `"0"`/`default_pg` (the whole replica; it is the TP group when PP = 1), then with
//! PP > 1 one `tp:device` group per stage and one `pp:device` group per TP rank, then with
//! EP > 1 one `moe_ep:device` group per EP slice.

/// Whose file names and process names the generated traces carry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Vendor {
    Sglang,
    Vllm,
}

/// GPUs per node: device index = global rank modulo this.
pub const GPUS_PER_NODE: u32 = 8;

/// One rank's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankPos {
    /// Global rank (the planted `--slow-rank` and vLLM's `rank{r}`).
    pub rank: u32,
    pub t: u32,
    pub d: u32,
    pub p: u32,
    pub e: u32,
}

/// A process group of one replica's world; `ranks` are replica-local ranks.
#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    pub desc: &'static str,
    pub ranks: Vec<u32>,
}

impl Group {
    /// `[0, 1, 2]`, as Kineto writes `Process Group Ranks`.
    pub fn ranks_text(&self) -> String {
        let parts: Vec<String> = self.ranks.iter().map(u32::to_string).collect();
        format!("[{}]", parts.join(", "))
    }
}

/// SGLang's by-stage profiles: one file per stage and rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Extend,
    Decode,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Extend => "EXTEND",
            Stage::Decode => "DECODE",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub tp: u32,
    pub dp: u32,
    pub pp: u32,
    pub ep: u32,
    groups: Vec<Group>,
}

impl Layout {
    /// Sizes must be ≥ 1 and `ep` must divide `tp` (checked by the caller).
    pub fn new(tp: u32, dp: u32, pp: u32, ep: u32) -> Self {
        let mut groups = vec![Group {
            name: "0".into(),
            desc: "default_pg",
            ranks: (0..tp * pp).collect(),
        }];
        let mut next = 1u32;
        let mut add = |groups: &mut Vec<Group>, desc, ranks| {
            groups.push(Group {
                name: next.to_string(),
                desc,
                ranks,
            });
            next += 1;
        };
        if pp > 1 {
            for p in 0..pp {
                add(&mut groups, "tp:device", (p * tp..(p + 1) * tp).collect());
            }
            for t in 0..tp {
                add(
                    &mut groups,
                    "pp:device",
                    (0..pp).map(|p| p * tp + t).collect(),
                );
            }
        }
        if ep > 1 {
            let slice = tp / ep;
            for p in 0..pp {
                for e in 0..ep {
                    let lo = p * tp + e * slice;
                    add(&mut groups, "moe_ep:device", (lo..lo + slice).collect());
                }
            }
        }
        Layout {
            tp,
            dp,
            pp,
            ep,
            groups,
        }
    }

    pub fn world(&self) -> u32 {
        self.tp * self.dp * self.pp
    }

    pub fn pos(&self, rank: u32) -> RankPos {
        let t = rank % self.tp;
        let p = (rank / self.tp) % self.pp;
        let d = rank / (self.tp * self.pp);
        RankPos {
            rank,
            t,
            d,
            p,
            e: t / (self.tp / self.ep),
        }
    }

    pub fn rank_of(&self, d: u32, p: u32, t: u32) -> u32 {
        (d * self.pp + p) * self.tp + t
    }

    /// Rank inside the replica's torch world (`distributedInfo.rank`).
    pub fn local(&self, pos: &RankPos) -> u32 {
        pos.p * self.tp + pos.t
    }

    pub fn device(&self, pos: &RankPos) -> u32 {
        pos.rank % GPUS_PER_NODE
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Index (in [`Layout::groups`]) of the TP group of stage `p`.
    pub fn tp_group(&self, p: u32) -> usize {
        if self.pp > 1 {
            1 + p as usize
        } else {
            0
        }
    }

    /// Index of the PP group of TP rank `t` (only with PP > 1).
    pub fn pp_group(&self, t: u32) -> usize {
        1 + self.pp as usize + t as usize
    }

    /// Kineto's `distributedInfo` for this rank, as JSON text.
    pub fn distributed_info(&self, pos: &RankPos) -> String {
        let local = self.local(pos);
        let mine: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.ranks.contains(&local))
            .map(|g| {
                format!(
                    r#"{{"pg_name": "{}", "pg_desc": "{}", "backend_config": "cuda:nccl", "pg_size": {}, "ranks": {}}}"#,
                    g.name,
                    g.desc,
                    g.ranks.len(),
                    g.ranks_text()
                )
            })
            .collect();
        format!(
            r#"{{"backend": "nccl", "rank": {local}, "world_size": {}, "pg_count": {}, "pg_config": [{}], "nccl_version": "2.21.5"}}"#,
            self.tp * self.pp,
            self.groups.len(),
            mine.join(", ")
        )
    }

    /// The CPU process name: SGLang's `sglang::scheduler_DP1_TP0`, vLLM's `VLLM::Worker_TP0`
    /// (a dimension only when its size is > 1).
    pub fn process_name(&self, naming: Vendor, pos: &RankPos) -> String {
        let mut s = String::from(match naming {
            Vendor::Sglang => "sglang::scheduler",
            Vendor::Vllm => "VLLM::Worker",
        });
        if self.dp > 1 {
            s += &format!("_DP{}", pos.d);
        }
        if self.pp > 1 {
            s += &format!("_PP{}", pos.p);
        }
        if self.tp > 1 {
            s += &format!("_TP{}", pos.t);
        }
        if self.ep > 1 {
            s += &format!("_EP{}", pos.e);
        }
        s
    }

    /// The file name the framework would write for this rank.
    ///
    /// SGLang: `[{instance}-]{profile_id}-TP-{t}[-DP-{d}][-PP-{p}][-EP-{e}][-{STAGE}].trace.json.gz`;
    /// vLLM: `[{instance}_]dp{d}_pp{p}_tp{t}_dcp0_ep{e}_rank{r}.{ns}.pt.trace.json.gz`.
    pub fn file_name(&self, f: &FileNaming<'_>, pos: &RankPos, stage: Option<Stage>) -> String {
        let ext = if f.plain { "json" } else { "json.gz" };
        match f.naming {
            Vendor::Sglang => {
                let mut s = String::new();
                if let Some(i) = f.instance {
                    s += i;
                    s.push('-');
                }
                s += &format!("{}-TP-{}", f.profile_id, pos.t);
                if self.dp > 1 {
                    s += &format!("-DP-{}", pos.d);
                }
                if self.pp > 1 {
                    s += &format!("-PP-{}", pos.p);
                }
                if self.ep > 1 {
                    s += &format!("-EP-{}", pos.e);
                }
                if let Some(st) = stage {
                    s.push('-');
                    s += st.name();
                }
                format!("{s}.trace.{ext}")
            }
            Vendor::Vllm => {
                let prefix = f.instance.map(|i| format!("{i}_")).unwrap_or_default();
                let ep = if self.ep > 1 { pos.e } else { 0 };
                format!(
                    "{prefix}dp{}_pp{}_tp{}_dcp0_ep{ep}_rank{}.{}.pt.trace.{ext}",
                    pos.d,
                    pos.p,
                    pos.t,
                    pos.rank,
                    f.vllm_ns + u128::from(pos.rank) * 1_734_219 + u128::from(pos.t) * 97
                )
            }
        }
    }
}

/// What the file name of a rank depends on besides its position.
pub struct FileNaming<'a> {
    pub naming: Vendor,
    pub profile_id: &'a str,
    pub instance: Option<&'a str>,
    /// vLLM's `time.time_ns()` at export for rank 0; other ranks a little later.
    pub vllm_ns: u128,
    pub plain: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_positions_round_trip() {
        let l = Layout::new(4, 2, 2, 2);
        assert_eq!(l.world(), 16);
        for r in 0..16 {
            let p = l.pos(r);
            assert_eq!(l.rank_of(p.d, p.p, p.t), r);
            assert_eq!(p.e, p.t / 2);
        }
        let p = l.pos(13); // d=1, p=1, t=1
        assert_eq!((p.d, p.p, p.t, l.local(&p)), (1, 1, 1, 5));
    }

    #[test]
    fn groups_of_a_pipelined_replica() {
        let l = Layout::new(2, 1, 2, 1);
        let g: Vec<(&str, &str, String)> = l
            .groups()
            .iter()
            .map(|g| (g.name.as_str(), g.desc, g.ranks_text()))
            .collect();
        assert_eq!(
            g,
            vec![
                ("0", "default_pg", "[0, 1, 2, 3]".to_string()),
                ("1", "tp:device", "[0, 1]".to_string()),
                ("2", "tp:device", "[2, 3]".to_string()),
                ("3", "pp:device", "[0, 2]".to_string()),
                ("4", "pp:device", "[1, 3]".to_string()),
            ]
        );
        assert_eq!(l.tp_group(1), 2);
        assert_eq!(l.pp_group(1), 4);
    }

    #[test]
    fn names_as_the_frameworks_write_them() {
        let l = Layout::new(2, 2, 1, 1);
        let f = FileNaming {
            naming: Vendor::Sglang,
            profile_id: "17",
            instance: None,
            vllm_ns: 5,
            plain: false,
        };
        assert_eq!(
            l.file_name(&f, &l.pos(3), None),
            "17-TP-1-DP-1.trace.json.gz"
        );
        assert_eq!(
            l.file_name(&f, &l.pos(2), Some(Stage::Decode)),
            "17-TP-0-DP-1-DECODE.trace.json.gz"
        );
        assert_eq!(
            l.process_name(Vendor::Sglang, &l.pos(2)),
            "sglang::scheduler_DP1_TP0"
        );
        let v = FileNaming {
            naming: Vendor::Vllm,
            instance: Some("a"),
            ..f
        };
        assert_eq!(
            l.file_name(&v, &l.pos(3), None),
            format!(
                "a_dp1_pp0_tp1_dcp0_ep0_rank3.{}.pt.trace.json.gz",
                5 + 3 * 1_734_219 + 97
            )
        );
        let one = Layout::new(1, 1, 1, 1);
        assert_eq!(
            one.process_name(Vendor::Sglang, &one.pos(0)),
            "sglang::scheduler"
        );
    }
}
