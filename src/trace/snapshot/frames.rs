//! The frames of a snapshot's stack traces, each kept once ([`FrameTable`]), and the rule that
//! picks an allocation's **top user frame**: the first frame of its stack (innermost first, as
//! torch writes them) that is not torch's or the allocator's own ([`is_internal`]).

use std::rc::Rc;

use rustc_hash::FxHashMap;

/// The group of an allocation whose stack has frames but none outside torch.
pub(crate) const NO_USER_FRAME: u32 = u32::MAX - 1;
/// The group of an allocation recorded without a stack (`stacks=None`, or no `frames`).
pub(crate) const NO_FRAMES: u32 = u32::MAX;

/// Whether a frame is torch's or the allocator's own, not the program's: no file name (`""`,
/// `"??"`: an unsymbolized C++ frame), a C/C++/CUDA source (`.c`, `.cc`, `.cpp`, `.cxx`, `.h`,
/// `.hpp`, `.cu`, `.cuh`: the caching allocator, the dispatcher, the interpreter), or a Python
/// file of torch itself (its path has a `torch/` directory: `…/site-packages/torch/nn/…`).
pub fn is_internal(filename: &str) -> bool {
    const NATIVE: [&str; 8] = [".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh"];
    filename.is_empty()
        || filename == "??"
        || NATIVE.iter().any(|x| filename.ends_with(x))
        || filename.starts_with("torch/")
        || filename.contains("/torch/")
}

struct Frame {
    filename: Rc<str>,
    line: i64,
    name: Rc<str>,
    user: bool,
}

/// Every distinct frame of a snapshot, by number.
#[derive(Default)]
pub(crate) struct FrameTable {
    frames: Vec<Frame>,
    index: FxHashMap<(Rc<str>, i64, Rc<str>), u32>,
}

impl FrameTable {
    /// The number of the frame (`filename`, `line`, `name`), kept on first sight.
    pub(crate) fn intern(&mut self, filename: Rc<str>, line: i64, name: Rc<str>) -> u32 {
        let key = (filename, line, name);
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        let user = !is_internal(&key.0);
        self.frames.push(Frame {
            filename: Rc::clone(&key.0),
            line,
            name: Rc::clone(&key.2),
            user,
        });
        self.index.insert(key, id);
        id
    }

    /// Whether frame `id` is the program's (see [`is_internal`]).
    pub(crate) fn is_user(&self, id: u32) -> bool {
        self.frames.get(id as usize).is_some_and(|f| f.user)
    }

    /// A group in words: `model.py:42 load_weights`, `(no user frame)`, `(no frames)`.
    pub(crate) fn label(&self, id: u32) -> String {
        match (id, self.frames.get(id as usize)) {
            (_, Some(f)) => format!("{}:{} {}", f.filename, f.line, f.name),
            (NO_USER_FRAME, None) => "(no user frame)".into(),
            _ => "(no frames)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_and_native_frames_are_internal() {
        for f in [
            "",
            "??",
            "/pytorch/c10/cuda/CUDACachingAllocator.cpp",
            "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py",
            "torch/_tensor.py",
        ] {
            assert!(is_internal(f), "{f}");
        }
        for f in [
            "/srv/app/model.py",
            "sglang/srt/mem_cache/memory_pool.py",
            "torchvision_like.py",
        ] {
            assert!(!is_internal(f), "{f}");
        }
    }

    #[test]
    fn a_frame_is_kept_once() {
        let mut t = FrameTable::default();
        let a = t.intern("model.py".into(), 42, "load_weights".into());
        let b = t.intern("model.py".into(), 42, "load_weights".into());
        assert_eq!(a, b);
        assert!(t.is_user(a));
        assert_eq!(t.label(a), "model.py:42 load_weights");
        assert_eq!(t.label(NO_USER_FRAME), "(no user frame)");
    }
}
