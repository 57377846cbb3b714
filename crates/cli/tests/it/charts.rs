//! `gantt`: charts render with the embedded font only (no fontconfig, no system fonts, as on CI), PNGs decode
//! to the asked size, SVGs parse and carry their text, waits stay visible, and timeline files are checked.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dashc, fails_with, stderr};

/// A scratch folder unique to this test process and `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dashc-charts-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_ok(args: &[&str]) {
    let out = dashc(args);
    assert!(out.status.success(), "dashc {args:?}: {}", stderr(&out));
}

/// Width, height and RGB pixels of a PNG file.
fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// Pixels of the chart's wait colour (#D55E00).
fn wait_pixels(rgb: &[u8]) -> usize {
    rgb.chunks_exact(3).filter(|p| p == &[0xD5, 0x5E, 0x00]).count()
}

/// All text of an SVG document, after checking that it parses as XML with an `svg` root of the given size.
fn svg_text(path: &Path, width: u32, height: u32) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the svg parses as xml");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some(width.to_string().as_str()));
    assert_eq!(root.attribute("height"), Some(height.to_string().as_str()));
    doc.descendants().filter(|n| n.is_text()).filter_map(|n| n.text()).collect::<Vec<_>>().join("\n")
}

const IDEAL_FULL: [&str; 8] = ["--ideal", "--tiles", "8", "--heads", "4", "--mask", "full", "--compare"];

#[test]
fn png_and_svg_render_with_the_embedded_font_and_show_waits() {
    let dir = scratch("render");
    let png_path = dir.join("naive-shift.png");
    let svg_path = dir.join("naive-shift.svg");
    for path in [&png_path, &svg_path] {
        let mut args = vec!["gantt", "-o", path.to_str().unwrap(), "--width", "900", "--height", "701"];
        args.extend(IDEAL_FULL);
        args.push("naive,shift");
        run_ok(&args);
    }
    let (w, h, rgb) = decode_png(&png_path);
    assert_eq!((w, h), (900, 701));
    let text = svg_text(&svg_path, 900, 701);
    for needle in [
        "full mask: batch 1 × 4 heads, seqlen 1024",
        "naive: makespan 41.75",
        "shift: makespan 40",
        "time (tile-compute units)",
    ] {
        assert!(text.contains(needle), "svg text lacks {needle:?}:\n{text}");
    }

    // Naive makes SMs wait on every dQ tile's first add; shift never does. The legend shows the wait colour once
    // in both charts, so naive must carry far more of it.
    let shift_path = dir.join("shift.png");
    let mut args = vec!["gantt", "-o", shift_path.to_str().unwrap(), "--width", "900", "--height", "400"];
    args.extend(IDEAL_FULL);
    args.push("shift");
    run_ok(&args);
    let (_, _, shift_rgb) = decode_png(&shift_path);
    assert!(wait_pixels(&rgb) > wait_pixels(&shift_rgb) + 200, "{} vs {}", wait_pixels(&rgb), wait_pixels(&shift_rgb));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn waits_far_narrower_than_a_pixel_stay_visible_at_132_sms() {
    // 2 heads x 256 x 128 tiles on 132 SMs: a compute is a fraction of a pixel wide, and descending's only waits
    // are a few reduce-lengths at the start of each head. They must still paint pixels beyond the legend's.
    let dir = scratch("dense");
    let dense = dir.join("dense.png");
    let legend_only = dir.join("legend.png");
    run_ok(&["gantt", "-o", dense.to_str().unwrap(), "--heads", "2", "--schedule", "descending"]);
    run_ok(&[
        "gantt",
        "-o",
        legend_only.to_str().unwrap(),
        "--ideal",
        "--tiles",
        "4",
        "--heads",
        "1",
        "--mask",
        "full",
        "--schedule",
        "shift",
    ]);
    let (w, _, rgb) = decode_png(&dense);
    assert_eq!(w, 1600);
    let (_, _, legend_rgb) = decode_png(&legend_only);
    assert!(
        wait_pixels(&rgb) > wait_pixels(&legend_rgb) + 100,
        "{} vs {}",
        wait_pixels(&rgb),
        wait_pixels(&legend_rgb)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_timeline_file_is_drawn_and_compare_picks_from_it() {
    let dir = scratch("timeline");
    let timeline = dir.join("t.json");
    run_ok(&[
        "simulate",
        "--ideal",
        "--tiles",
        "8",
        "--heads",
        "2",
        "--mask",
        "causal",
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    let svg = dir.join("pick.svg");
    run_ok(&[
        "gantt",
        "--timeline",
        timeline.to_str().unwrap(),
        "--compare",
        "symmetric-shift,naive",
        "-o",
        svg.to_str().unwrap(),
        "--width",
        "1000",
        "--height",
        "800",
    ]);
    let text = svg_text(&svg, 1000, 800);
    assert!(text.contains("symmetric-shift: makespan"), "{text}");
    assert!(text.contains("naive: makespan"), "{text}");
    assert!(!text.contains("descending: makespan"), "{text}");
    // Stacked in the order asked for.
    assert!(text.find("symmetric-shift: makespan") < text.find("naive: makespan"));

    // A measured trace in microseconds: the axis says so, and no bound line is needed.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&timeline).unwrap()).unwrap();
    doc["source"] = "measured".into();
    doc["time_unit"] = "us".into();
    doc.as_object_mut().unwrap().remove("costs");
    for s in doc["schedules"].as_array_mut().unwrap() {
        s["best_bound"] = Value::Null;
    }
    let measured = dir.join("measured.json");
    std::fs::write(&measured, serde_json::to_string(&doc).unwrap()).unwrap();
    let svg = dir.join("measured.svg");
    run_ok(&[
        "gantt",
        "--timeline",
        measured.to_str().unwrap(),
        "--compare",
        "spt",
        "-o",
        svg.to_str().unwrap(),
        "--width",
        "800",
        "--height",
        "500",
    ]);
    let text = svg_text(&svg, 800, 500);
    assert!(text.contains("time (µs)"), "{text}");
    assert!(text.contains("measured timeline"), "{text}");
    assert!(!text.contains("best lower bound"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_gantt_input_is_one_line_and_exit_2() {
    let dir = scratch("bad");
    let ideal = ["--ideal", "--tiles", "4", "--heads", "1", "--mask", "full"];
    let with = |extra: &[&str]| -> Vec<String> {
        ["gantt"].iter().chain(extra).chain(&ideal).map(|s| s.to_string()).collect()
    };
    let fails = |args: Vec<String>, needle: &str| {
        fails_with(&args.iter().map(String::as_str).collect::<Vec<_>>(), 2, needle);
    };
    fails(
        with(&["-o", "chart.jpg"]),
        "cannot tell the image format of chart.jpg: give a file name ending in .png or .svg",
    );
    fails(with(&["-o", "chart"]), "cannot tell the image format");
    fails(with(&["-o", "/nonexistent/dir/chart.png"]), "cannot write /nonexistent/dir/chart.png");
    fails(with(&["-o", "c.png", "--compare", " , "]), "--compare is empty");
    fails(with(&["-o", "c.png", "--compare", "naive", "--schedule", "shift"]), "--compare and --schedule both choose");
    fails(with(&["-o", "c.png", "--width", "10"]), "--width 10 is outside 320..=16000 pixels");
    fails(with(&["-o", "c.png", "--height", "330", "--compare", "naive,descending,spt,shift"]), "--height 330 leaves");

    // Timeline files: unreadable, not JSON, wrong format, defects inside; shape flags do not go with them.
    let t = dir.join("t.json");
    run_ok(&[
        "simulate",
        "--ideal",
        "--tiles",
        "4",
        "--heads",
        "1",
        "--mask",
        "full",
        "--schedule",
        "naive",
        "--timeline",
        t.to_str().unwrap(),
    ]);
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&t).unwrap()).unwrap();
    let gantt = |file: &Path, needle: &str| {
        fails_with(&["gantt", "--timeline", file.to_str().unwrap(), "-o", "x.png"], 2, needle);
    };
    gantt(&dir.join("missing.json"), "cannot read timeline file");
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    gantt(&write("trunc.json", "{\"format\": \"dashc-timeline\",".into()), "invalid timeline file");
    let mut v = good.clone();
    v["format"] = "chrome-trace".into();
    gantt(&write("format.json", v.to_string()), "format is 'chrome-trace', expected 'dashc-timeline'");
    let mut v = good.clone();
    v["schema_version"] = 7.into();
    gantt(&write("version.json", v.to_string()), "schema_version 7 is not supported");
    let mut v = good.clone();
    v["time_unit"] = "fortnights".into();
    gantt(&write("unit.json", v.to_string()), "time_unit is 'fortnights'");
    let mut v = good.clone();
    v["schedules"][0]["segments"][3]["sm"] = 99.into();
    gantt(&write("sm.json", v.to_string()), "segment 3: sm 99 is outside the machine's 4 SMs");
    let mut v = good.clone();
    v["schedules"][0]["segments"][0]["end"] = (-1.0).into();
    gantt(&write("order.json", v.to_string()), "must be finite with 0 <= start <= end");
    let mut v = good.clone();
    v["schedules"] = Value::Array(vec![]);
    gantt(&write("empty.json", v.to_string()), "it holds no schedule");
    let mut v = good.clone();
    v["surprise"] = 1.into();
    gantt(&write("unknown.json", v.to_string()), "unknown field `surprise`");
    fails_with(
        &["gantt", "--timeline", t.to_str().unwrap(), "--compare", "shift", "-o", "x.png"],
        2,
        "--compare: no schedule 'shift' in the timeline (it has naive)",
    );
    fails_with(
        &["gantt", "--timeline", t.to_str().unwrap(), "--seqlen", "4096", "-o", "x.png"],
        2,
        "cannot be used with",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_crate_brings_in_fontconfig() {
    // plotters' default features pull font-kit and fontconfig, which a bare CI machine lacks; the lock file
    // shows whether any crate of the workspace turned them back on.
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock")).unwrap();
    for banned in ["name = \"font-kit\"", "name = \"yeslogic-fontconfig-sys\"", "name = \"servo-fontconfig\""] {
        assert!(!lock.contains(banned), "Cargo.lock contains {banned}");
    }
}
