//! A reader that stops early (`dashc ... | head -1`) ends dashc quietly, as it ends other Unix tools: no panic
//! about a broken pipe.

use std::io::Read;
use std::process::{Command, Stdio};

/// Runs dashc with its stdout read by nobody: the read end is closed before dashc writes, and the output is
/// larger than a pipe's buffer (64 KiB on Linux), so that a write fails whatever the timing.
fn run_with_stdout_closed(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dashc"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dashc runs");
    drop(child.stdout.take());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (child.wait().unwrap(), err)
}

#[test]
fn a_closed_stdout_ends_dashc_without_a_panic() {
    for args in [&["simulate", "--per-sm", "--sms", "1024"][..], &["simulate", "--per-sm", "--json"]] {
        let (status, err) = run_with_stdout_closed(args);
        assert!(!err.contains("panicked"), "dashc {args:?} panicked: {err}");
        assert_ne!(status.code(), Some(101), "dashc {args:?}: {err}");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(libc::SIGPIPE), "dashc {args:?} ended by {status}: {err}");
        }
    }
}
