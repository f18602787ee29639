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
//! EP > 1 the `moe_ep:device` groups: SGLang's `initialize_model_parallel` puts the ranks
//! `j, j + tp/ep, j + 2·tp/ep, …` in one (size `ep`, one rank of each EP slice).
//!
//! **DP attention** (SGLang `--enable-dp-attention`, [`Layout::dp_attention`]): the `dp` groups
//! of `tp` ranks are *one* SGLang TP group of `dp × tp` ranks (SGLang's `--tp` is `dp × tp`,
//! its `--dp` is `dp`, the attention TP size is `tp`). What a real run writes, from SGLang's
//! sources (sgl-project/sglang):
//! - `data_parallel_controller.launch_tensor_parallel_group` gives each scheduler its
//!   `tp_rank` over the whole group, `dp_rank = tp_rank // attn_tp_size`
//!   (`compute_dp_attention_world_info`) and `moe_ep_rank = tp_rank // (tp_size // ep_size)`;
//! - `utils/profile_utils.py` (`_ProfilerTorch.stop`) names the trace
//!   `{profile_id}-TP-{tp_rank}[-DP-{dp_rank}][-PP-{pp_rank}][-EP-{moe_ep_rank}]{-stage}.trace.json.gz`
//!   (a part only when its size is > 1), so the files are `…-TP-17-DP-1-EP-1…`: TP indices
//!   never repeat across DP indices (what `analyze::explain::ep::ep_spans_dp` reads);
//! - DP reuses the TP group's torch world ("all dp ranks should use the same nccl port"):
//!   `distributedInfo.rank` is the global rank and `world_size` is `dp × tp`; the attention TP
//!   groups (`attention_tp:device`, SGLang's `dp_attention.py`) are the `dp` blocks of `tp`
//!   ranks, and the `moe_ep:device` groups stride over the whole world.

/// Whose file names and process names the generated traces carry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Vendor {
    Sglang,
    Vllm,
}

/// GPUs per node: device index = global rank modulo this.
pub(crate) const GPUS_PER_NODE: u32 = 8;

/// One rank's coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RankPos {
    /// Global rank (the planted `--slow-rank` and vLLM's `rank{r}`).
    pub(crate) rank: u32,
    pub(crate) t: u32,
    pub(crate) d: u32,
    pub(crate) p: u32,
    pub(crate) e: u32,
}

/// A process group of one replica's world; `ranks` are replica-local ranks.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub(crate) name: String,
    pub(crate) desc: &'static str,
    pub(crate) ranks: Vec<u32>,
}

impl Group {
    /// `[0, 1, 2]`, as Kineto writes `Process Group Ranks`.
    pub(crate) fn ranks_text(&self) -> String {
        let parts: Vec<String> = self.ranks.iter().map(u32::to_string).collect();
        format!("[{}]", parts.join(", "))
    }

    /// Where rank `rank` (of the replica's world) stands in the group: the rank a
    /// point-to-point op names its peer by (torch's `group_dst` / `group_src`).
    pub(crate) fn rank_in(&self, rank: u32) -> u32 {
        self.ranks
            .iter()
            .position(|&r| r == rank)
            .map_or(rank, |i| i as u32)
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
pub(crate) struct Layout {
    pub(crate) tp: u32,
    pub(crate) dp: u32,
    pub(crate) pp: u32,
    pub(crate) ep: u32,
    /// SGLang DP attention: the DP groups are one TP group (see the module doc).
    pub(crate) dp_attention: bool,
    groups: Vec<Group>,
}

impl Layout {
    /// Sizes must be ≥ 1 and `ep` must divide `tp` (checked by the caller).
    pub(crate) fn new(tp: u32, dp: u32, pp: u32, ep: u32) -> Self {
        Self::build(tp, dp, pp, ep, false)
    }

    /// SGLang DP attention: `dp` attention groups of `tp` ranks, one world and one TP group of
    /// `dp × tp` ranks, PP 1; `ep` must divide `dp × tp` (checked by the caller).
    pub(crate) fn with_dp_attention(tp: u32, dp: u32, ep: u32) -> Self {
        Self::build(tp, dp, 1, ep, true)
    }

    fn build(tp: u32, dp: u32, pp: u32, ep: u32, dp_attention: bool) -> Self {
        // The ranks of one torch world: a replica, or every rank under DP attention.
        let (world, tp_world) = if dp_attention {
            (dp * tp, dp * tp)
        } else {
            (tp * pp, tp)
        };
        let mut groups = vec![Group {
            name: "0".into(),
            desc: "default_pg",
            ranks: (0..world).collect(),
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
        if dp_attention && tp > 1 {
            for d in 0..dp {
                add(
                    &mut groups,
                    "attention_tp:device",
                    (d * tp..(d + 1) * tp).collect(),
                );
            }
        }
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
            // SGLang's `initialize_model_parallel`: per TP group, for j < moe_tp the ranks
            // j, j + moe_tp, …: one rank of each EP slice.
            let moe_tp = tp_world / ep;
            for p in 0..pp {
                for j in 0..moe_tp {
                    let lo = p * tp_world + j;
                    add(
                        &mut groups,
                        "moe_ep:device",
                        (0..ep).map(|e| lo + e * moe_tp).collect(),
                    );
                }
            }
        }
        Layout {
            tp,
            dp,
            pp,
            ep,
            dp_attention,
            groups,
        }
    }

    pub(crate) fn world(&self) -> u32 {
        self.tp * self.dp * self.pp
    }

    pub(crate) fn pos(&self, rank: u32) -> RankPos {
        let t = rank % self.tp;
        let p = (rank / self.tp) % self.pp;
        let d = rank / (self.tp * self.pp);
        // SGLang: moe_ep_rank = tp_rank // (tp_size // ep_size), over its TP group.
        let e = if self.dp_attention {
            (d * self.tp + t) / (self.dp * self.tp / self.ep)
        } else {
            t / (self.tp / self.ep)
        };
        RankPos { rank, t, d, p, e }
    }

    /// SGLang's `tp_rank`: the TP index, over every DP rank under DP attention.
    pub(crate) fn sglang_tp(&self, pos: &RankPos) -> u32 {
        if self.dp_attention {
            pos.d * self.tp + pos.t
        } else {
            pos.t
        }
    }

    #[cfg(test)]
    pub(crate) fn rank_of(&self, d: u32, p: u32, t: u32) -> u32 {
        (d * self.pp + p) * self.tp + t
    }

    /// Rank inside the replica's torch world (`distributedInfo.rank`); the global rank under
    /// DP attention (one world).
    pub(crate) fn local(&self, pos: &RankPos) -> u32 {
        if self.dp_attention {
            pos.rank
        } else {
            pos.p * self.tp + pos.t
        }
    }

    /// `distributedInfo.world_size`.
    pub(crate) fn world_size(&self) -> u32 {
        if self.dp_attention {
            self.dp * self.tp
        } else {
            self.tp * self.pp
        }
    }

    pub(crate) fn device(&self, pos: &RankPos) -> u32 {
        pos.rank % GPUS_PER_NODE
    }

    pub(crate) fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// Index (in [`Layout::groups`]) of the TP group of this rank's stage (its attention TP
    /// group under DP attention).
    pub(crate) fn tp_group(&self, pos: &RankPos) -> usize {
        if self.dp_attention && self.tp > 1 {
            1 + pos.d as usize
        } else if self.pp > 1 {
            1 + pos.p as usize
        } else {
            0
        }
    }

    /// Index of the PP group of TP rank `t` (only with PP > 1).
    pub(crate) fn pp_group(&self, t: u32) -> usize {
        1 + self.pp as usize + t as usize
    }

    /// Kineto's `distributedInfo` for this rank, as JSON text: NCCL's, or with `gloo` a
    /// CPU-only run's (backend `gloo`, `cpu:gloo,cuda:gloo` groups, no NCCL version).
    pub(crate) fn distributed_info(&self, pos: &RankPos, gloo: bool) -> String {
        let backend = if gloo {
            "cpu:gloo,cuda:gloo"
        } else {
            "cuda:nccl"
        };
        let local = self.local(pos);
        let mine: Vec<String> = self
            .groups
            .iter()
            .filter(|g| g.ranks.contains(&local))
            .map(|g| {
                format!(
                    r#"{{"pg_name": "{}", "pg_desc": "{}", "backend_config": "{backend}", "pg_size": {}, "ranks": {}}}"#,
                    g.name,
                    g.desc,
                    g.ranks.len(),
                    g.ranks_text()
                )
            })
            .collect();
        if gloo {
            return format!(
                r#"{{"backend": "gloo", "rank": {local}, "world_size": {}, "pg_count": {}, "pg_config": [{}]}}"#,
                self.world_size(),
                self.groups.len(),
                mine.join(", ")
            );
        }
        format!(
            r#"{{"backend": "nccl", "rank": {local}, "world_size": {}, "pg_count": {}, "pg_config": [{}], "nccl_version": "2.21.5"}}"#,
            self.world_size(),
            self.groups.len(),
            mine.join(", ")
        )
    }

    /// The CPU process name: SGLang's `sglang::scheduler_DP1_TP0`, vLLM's `VLLM::Worker_TP0`
    /// (a dimension only when its size is > 1).
    pub(crate) fn process_name(&self, naming: Vendor, pos: &RankPos) -> String {
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
        let sglang_tp_size = if self.dp_attention {
            self.dp * self.tp
        } else {
            self.tp
        };
        if sglang_tp_size > 1 {
            s += &format!("_TP{}", self.sglang_tp(pos));
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
    pub(crate) fn file_name(
        &self,
        f: &FileNaming<'_>,
        pos: &RankPos,
        stage: Option<Stage>,
    ) -> String {
        let ext = if f.plain { "json" } else { "json.gz" };
        match f.naming {
            Vendor::Sglang => {
                let mut s = String::new();
                if let Some(i) = f.instance {
                    s += i;
                    s.push('-');
                }
                s += &format!("{}-TP-{}", f.profile_id, self.sglang_tp(pos));
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
pub(crate) struct FileNaming<'a> {
    pub(crate) naming: Vendor,
    pub(crate) profile_id: &'a str,
    pub(crate) instance: Option<&'a str>,
    /// vLLM's `time.time_ns()` at export for rank 0; other ranks a little later.
    pub(crate) vllm_ns: u128,
    pub(crate) plain: bool,
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
        assert_eq!(l.tp_group(&l.pos(2)), 2);
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

    #[test]
    fn moe_ep_groups_take_one_rank_of_each_slice() {
        let l = Layout::new(4, 1, 1, 2);
        let ep: Vec<String> = l
            .groups()
            .iter()
            .filter(|g| g.desc == "moe_ep:device")
            .map(Group::ranks_text)
            .collect();
        assert_eq!(ep, vec!["[0, 2]", "[1, 3]"]);
        assert_eq!((l.pos(1).e, l.pos(2).e), (0, 1));
    }

    #[test]
    fn dp_attention_is_one_world_named_as_sglang_names_it() {
        // SGLang --tp 8 --dp 4 --ep 4 --enable-dp-attention: attention TP 2, MoE TP 2.
        let l = Layout::with_dp_attention(2, 4, 4);
        assert_eq!((l.world(), l.world_size()), (8, 8));
        let p = l.pos(5);
        assert_eq!(
            (p.d, p.t, p.e, l.sglang_tp(&p), l.local(&p)),
            (2, 1, 2, 5, 5)
        );
        let f = FileNaming {
            naming: Vendor::Sglang,
            profile_id: "17",
            instance: None,
            vllm_ns: 0,
            plain: false,
        };
        assert_eq!(l.file_name(&f, &p, None), "17-TP-5-DP-2-EP-2.trace.json.gz");
        assert_eq!(
            l.process_name(Vendor::Sglang, &p),
            "sglang::scheduler_DP2_TP5_EP2"
        );
        let g: Vec<(&str, String)> = l
            .groups()
            .iter()
            .map(|g| (g.desc, g.ranks_text()))
            .collect();
        assert_eq!(g[0], ("default_pg", "[0, 1, 2, 3, 4, 5, 6, 7]".to_string()));
        assert_eq!(g[3], ("attention_tp:device", "[4, 5]".to_string()));
        assert_eq!(g[5], ("moe_ep:device", "[0, 2, 4, 6]".to_string()));
        assert_eq!(g[6], ("moe_ep:device", "[1, 3, 5, 7]".to_string()));
        assert_eq!(l.groups()[l.tp_group(&p)].ranks_text(), "[4, 5]");
        let info = l.distributed_info(&p, false);
        assert!(info.contains(r#""rank": 5, "world_size": 8"#), "{info}");
        assert!(info.contains(r#""ranks": [1, 3, 5, 7]"#), "{info}");
        let gloo = l.distributed_info(&p, true);
        assert!(
            gloo.starts_with(r#"{"backend": "gloo", "rank": 5"#),
            "{gloo}"
        );
        assert!(
            gloo.contains(r#""backend_config": "cpu:gloo,cuda:gloo""#),
            "{gloo}"
        );
        assert!(!gloo.contains("nccl"), "{gloo}");
        // Attention TP 1 (SGLang --tp 4 --dp 4 --ep 4): TP index = DP index = EP index.
        let l = Layout::with_dp_attention(1, 4, 4);
        assert_eq!(
            l.file_name(&f, &l.pos(3), None),
            "17-TP-3-DP-3-EP-3.trace.json.gz"
        );
        assert_eq!(l.tp_group(&l.pos(3)), 0);
    }
}
