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

/// A stdout that cannot take the output (redirected to a full disk) is an error like any failed write: one line
/// on stderr and exit 2, not a panic. /dev/full fails every write with ENOSPC; the table and the `--json`
/// document go through the same writer.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    for args in [&["sweep"][..], &["bounds", "--json"], &["simulate", "--per-sm"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full opens");
        let out = Command::new(env!("CARGO_BIN_EXE_dashc")).args(args).stdout(full).output().expect("dashc runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "dashc {args:?} panicked: {err}");
        assert_eq!(out.status.code(), Some(2), "dashc {args:?}: {err}");
        assert!(err.contains("cannot write to standard output"), "dashc {args:?}: {err}");
    }
}
