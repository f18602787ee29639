//! compare (to be filled).
