//! The `oxwright` command line.

fn main() {}
