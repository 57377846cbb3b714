//! Exit codes: 0 success, 1 a check failed, 2 bad input or usage, 3 toolchain or GPU unavailable.
//!
//! Errors travel as `anyhow::Error`; those caused by the user's input carry a `BadInput` (or a library error
//! known to come from input) somewhere in their chain, and `code_of` finds it.

use std::fmt;

/// An error caused by the user's input: exit code 2.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BadInput {}

/// A check that ran and failed (a kernel mismatch, a prediction off beyond tolerance): exit code 1.
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CheckFailed {}

/// The toolchain or the GPU is missing: exit code 3.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Unavailable {}

/// Shorthand for returning a `BadInput`.
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

pub fn code_of(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<BadInput>()
            || cause.is::<schedulers::ScheduleError>()
            || cause.is::<dag_model::ModelError>()
            || cause.is::<serde_json::Error>()
        {
            return 2;
        }
        if cause.is::<Unavailable>() {
            return 3;
        }
        if cause.is::<CheckFailed>() {
            return 1;
        }
    }
    1
}

/// The error and its causes on one line, outermost first, without repeating a cause the outer message
/// already quotes.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out.replace('\n', " ")
}
