//! The stand-in's rules, free of AWS types.

pub mod doorbell;
pub mod notify;
pub mod push;
pub mod receiver;
pub mod remote;
pub mod row;
pub mod scrub;
pub mod wake;
pub mod watch;
