pub mod bounds;
pub mod simulate;
