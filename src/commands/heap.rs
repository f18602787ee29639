//! The process's heap settings, made once before a command runs. Only the command layer sets
//! them: the libraries leave the allocator to whoever links them.
//!
//! glibc's malloc gives memory back to the kernel as soon as the top of a heap holds more than
//! 128 KiB free. analyze and merge free a few MiB of buffers per rank (the spools' buffers, the
//! per-rank tables) and allocate them again for the next rank, and each time the kernel maps
//! and zeroes fresh pages: on the real 8-rank GPU set (`./bench`'s `real`, `analyze -j 1`)
//! ~7,800 page faults. Keeping 8 MiB of padding at the top of each heap (`M_TOP_PAD`) leaves
//! ~2,000, and analyze's CPU time drops by ~2 % (#14's seventh round; `perf stat -e
//! task-clock,page-faults`, best and mean of 5). The pages kept are ones the process had
//! touched anyway; 16 MiB saved no more faults and kept ~6 MB more resident on the 10 GB set.
//!
//! The same goes for the buffers of 128 KiB and more, which glibc maps on their own and unmaps
//! when freed (from the second free of one, up to its size), and for a heap's top beyond twice
//! that threshold: each rank's spools grow to a few MiB, are freed and grow again for the
//! next. Mapping every buffer under 32 MiB from the heap (`M_MMAP_THRESHOLD`) and giving a
//! heap's top back only beyond 64 MiB (`M_TRIM_THRESHOLD`) leaves the freed pages mapped for
//! the next rank: on the bench's synthetic set (`analyze -j 1`) 20,600 page faults become
//! ~9,000, and on a virtual machine whose every fresh page costs a trip to its host that is
//! ~3 % of analyze's CPU time. What stays resident is at most what the process held at its
//! peak.
//! Other C libraries are left as they are.

/// Sets the heap parameters (glibc on Linux; nothing elsewhere).
pub(super) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets one of malloc's parameters (a valid one, to a valid value);
    // it takes malloc's own lock, so any thread may call it at any time.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}
