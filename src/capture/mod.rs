//! capture (to be filled).
