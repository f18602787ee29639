//! `rankprof synth`: arguments → [`SynthOptions`], the set written, one line per file.

use anyhow::{Context, Result};

use crate::cli::synth::SynthArgs;
use crate::exit;
use crate::synth::catalog::Class;
use crate::synth::{
    write_set, Delay, Extra, Heavy, MemoryPlant, Slow, SlowLink, SynthOptions, DEFAULT_BASE_NS,
};

/// The library's options from the command line (validated).
pub(crate) fn options(a: &SynthArgs) -> Result<SynthOptions> {
    let class = match a.slow_class.as_deref() {
        None => None,
        Some(s) => Some(Class::parse(s).with_context(|| {
            let names: Vec<&str> = Class::ALL.iter().map(|c| c.name()).collect();
            format!("--slow-class {s}: expected one of {}", names.join(", "))
        })?),
    };
    let cfg = SynthOptions {
        naming: a.naming,
        tp: a.tp,
        dp: a.dp,
        pp: a.pp,
        ep: a.ep,
        dp_attention: a.dp_attention,
        steps: a.steps,
        layers: a.layers,
        target_bytes: a.target_mb.map(|m| m.saturating_mul(1_000_000)),
        profile_id: a.profile_id.clone(),
        instance: a.instance.clone(),
        slow: a.slow_rank.map(|rank| Slow {
            rank,
            factor: a.factor,
            from_step: a.from_step,
            class,
        }),
        slow_stage: a.slow_stage,
        heavy: a.heavy_rank.map(|rank| Heavy {
            rank,
            factor: a.work_factor,
        }),
        extra: a.extra_kernels.map(|rank| Extra {
            rank,
            per_layer: a.extra_per_layer,
        }),
        hot_expert: a.hot_expert_rank.map(|rank| Heavy {
            rank,
            factor: a.work_factor,
        }),
        host_delay: a.host_delay_rank.map(|rank| delay(a, rank)),
        late_start: a.late_start_rank.map(|rank| delay(a, rank)),
        slow_link: a.slow_link.map(|replica| SlowLink {
            replica,
            factor: a.factor,
            from_step: a.from_step,
        }),
        microbatches: a.microbatches,
        overlap_comm: a.overlap_comm,
        overlap_delay: a.overlap_late_rank.map(|rank| delay(a, rank)),
        profile_memory: a.profile_memory,
        more_memory: plant(&a.plant_memory, "--plant-memory")?,
        leak: plant(&a.plant_leak, "--plant-leak")?,
        cpu_only: a.cpu_only,
        record_shapes: a.record_shapes,
        annotations: !a.no_annotations,
        same_batches: a.same_batches,
        seed: a.seed,
        step_noise: a.step_noise / 100.0,
        noise_seed: a.noise_seed,
        plain: a.plain,
        level: a.level,
        by_stage: a.by_stage,
        base_ns: a.base_time_ns.unwrap_or(DEFAULT_BASE_NS),
        base_skew_ns: a.base_skew_ns,
        base_first: a.base_first,
    };
    cfg.validate()?;
    Ok(cfg)
}

/// A memory plant's `RANK:BYTES`, parsed.
fn plant(v: &Option<String>, flag: &str) -> Result<Option<MemoryPlant>> {
    v.as_deref()
        .map(|s| MemoryPlant::parse(s).with_context(|| flag.to_string()))
        .transpose()
}

fn delay(a: &SynthArgs, rank: u32) -> Delay {
    Delay {
        rank,
        delay_ns: i64::try_from(a.delay_us.saturating_mul(1_000)).unwrap_or(i64::MAX),
        from_step: a.from_step,
    }
}

/// `rankprof synth`: writes the set and lists what was written.
pub(crate) fn run(args: &SynthArgs) -> Result<i32> {
    let cfg = options(args)?;
    let t0 = std::time::Instant::now();
    let written = write_set(&cfg, &args.out)?;
    let (mut events, mut json, mut disk) = (0u64, 0u64, 0u64);
    for w in &written {
        super::outln!(
            "{}  rank {}  {}  {} events  {} JSON  {} on disk",
            w.path.display(),
            w.rank,
            crate::analyze::explain::measure::count(w.steps, "step"),
            w.events,
            crate::report::text::size(w.json_bytes),
            crate::report::text::size(w.file_bytes)
        )?;
        events += w.events;
        json += w.json_bytes;
        disk += w.file_bytes;
    }
    let plant = match &cfg.slow {
        Some(s) => format!(
            "{} {} ×{} on {} from step {}",
            if cfg.slow_stage {
                "the stage of rank"
            } else {
                "rank"
            },
            s.rank,
            s.factor,
            s.class.map_or("all compute", Class::name),
            s.from_step
        ),
        None => "none".into(),
    };
    let mut plant = plant;
    if let Some(h) = &cfg.heavy {
        plant.push_str(&format!("; heavy: rank {} ×{} work", h.rank, h.factor));
    }
    if let Some(h) = &cfg.hot_expert {
        plant.push_str(&format!(
            "; hot experts: rank {} ×{} routed tokens",
            h.rank, h.factor
        ));
    }
    if let Some(e) = &cfg.extra {
        plant.push_str(&format!(
            "; extra kernels: rank {} +{} per layer",
            e.rank, e.per_layer
        ));
    }
    for (what, delay) in [
        ("host delay", &cfg.host_delay),
        ("late start", &cfg.late_start),
    ] {
        if let Some(d) = delay {
            plant.push_str(&format!(
                "; {what}: rank {} {} µs per step from step {}",
                d.rank,
                d.delay_ns / 1_000,
                d.from_step
            ));
        }
    }
    for (what, p) in [("more memory", &cfg.more_memory), ("leak", &cfg.leak)] {
        if let Some(p) = p {
            plant.push_str(&format!("; {what}: rank {} {} bytes", p.rank, p.bytes));
        }
    }
    if let Some(l) = &cfg.slow_link {
        plant.push_str(&format!(
            "; slow link: DP replica {} ×{} transfers from step {}",
            l.replica, l.factor, l.from_step
        ));
    }
    eprintln!(
        "wrote {}, {events} events, {} JSON, {} on disk in {:.1} s; slow: {plant}",
        crate::analyze::explain::measure::count(written.len(), "file"),
        crate::report::text::size(json),
        crate::report::text::size(disk),
        t0.elapsed().as_secs_f64()
    );
    Ok(exit::OK)
}
