//! Embeds the commit dashc is built from (`DASHC_BUILD_COMMIT`). The results a GPU command writes name the commit
//! they ran; the binary usually runs on another machine (built here, carried to the GPU), whose copy of the
//! repository may name another commit, so the build's own is the fallback when `DASHC_COMMIT` is not set.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DASHC_BUILD_COMMIT={commit}");
    // Build again when HEAD moves: on a checkout (HEAD) or a commit (the branch's ref, loose or packed).
    if let (Some(git_dir), Some(common)) =
        (git(&["rev-parse", "--absolute-git-dir"]), git(&["rev-parse", "--git-common-dir"]))
    {
        let common = std::path::Path::new(&common);
        let common =
            if common.is_absolute() { common.to_path_buf() } else { std::env::current_dir().unwrap().join(common) };
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(branch).display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
