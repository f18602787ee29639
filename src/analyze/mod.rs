//! analyze (to be filled).
