include!("../cli/build.rs");
