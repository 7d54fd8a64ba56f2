pub mod replay;
