//! Progress on stderr for analyses that can run for minutes (a large problem's schedules, a search), drawn only
//! where stderr is a terminal: piped or redirected, a command prints exactly what it printed before.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A count of `len` `things` done, with the time so far and a message; hidden unless stderr is a terminal.
pub fn counter(len: u64, things: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    shown(bar, &format!("{{spinner}} {{pos}}/{{len}} {things} [{{elapsed}}] {{msg}}"))
}

/// The time so far and a message, for work of no known length; hidden unless stderr is a terminal.
pub fn spinner() -> ProgressBar {
    shown(ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()), "{spinner} [{elapsed}] {msg}")
}

fn shown(bar: ProgressBar, template: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    // One schedule of a large problem can take minutes without a step done: tick so that the time moves.
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
