//! Writer (to be filled).
