//! `gantt`: charts render with the embedded font only (no fontconfig, no system fonts, as on CI), PNGs decode
//! to the asked size, SVGs parse and carry their text, waits stay visible, timeline files are checked, and a
//! prediction and a measurement of one problem share one time axis.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{costs_fixture, dashc, fails_with, stderr};

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
    fails(with(&["-o", "c.png", "--width", "10"]), "invalid value '10' for '--width <PX>': 10 is not in 320..=16000");
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
    v["machine"]["sms"] = u32::MAX.into();
    gantt(&write("sms.json", v.to_string()), "machine.sms must be between 1 and 4096 (got 4294967295)");
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
        "--compare: no schedule 'shift' in t.json (it has naive)",
    );
    fails_with(
        &["gantt", "--timeline", t.to_str().unwrap(), "--seqlen", "4096", "-o", "x.png"],
        2,
        "cannot be used with",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small problem on 8 SMs, predicted in µs with the fixture's costs (head dim 64, 128x128 tiles).
const PAIR_SHAPE: [&str; 12] = [
    "--heads",
    "2",
    "--seqlen",
    "512",
    "--head-dim",
    "64",
    "--mask",
    "causal",
    "--sms",
    "8",
    "--schedule",
    "naive,descending",
];

/// Writes the timeline that `simulate` predicts for `shape` (plus `extra` flags) to `path`.
fn simulate_timeline(path: &Path, shape: &[&str], extra: &[&str]) {
    let mut args = vec!["simulate", "--timeline", path.to_str().unwrap()];
    args.extend(shape);
    args.extend(extra);
    run_ok(&args);
}

/// What `dashc run --trace` would write for the prediction at `predicted`: a measured timeline in µs, without
/// costs or bounds, whose every time is `stretch` times the prediction's (so the two panels end far apart).
fn fake_measurement(predicted: &Path, stretch: f64) -> Value {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(predicted).unwrap()).unwrap();
    doc["source"] = "measured".into();
    doc.as_object_mut().unwrap().remove("costs");
    for s in doc["schedules"].as_array_mut().unwrap() {
        s["best_bound"] = Value::Null;
        s["makespan"] = (s["makespan"].as_f64().unwrap() * stretch).into();
        for g in s["segments"].as_array_mut().unwrap() {
            for t in ["start", "end"] {
                g[t] = (g[t].as_f64().unwrap() * stretch).into();
            }
        }
    }
    doc
}

/// The x positions of the makespan lines of an SVG chart: black rectangles 2 pixels wide and taller than the
/// legend's sample, one per panel, top to bottom.
fn makespan_lines(svg: &str) -> Vec<f64> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let mut lines: Vec<(f64, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#000000"))
        .filter(|n| num(n, "width") == 2.0 && num(n, "height") > 20.0)
        .map(|n| (num(&n, "y"), num(&n, "x")))
        .collect();
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    lines.into_iter().map(|(_, x)| x).collect()
}

#[test]
fn a_prediction_and_a_measurement_share_one_time_axis() {
    let dir = scratch("pair");
    let costs = costs_fixture();
    let pred = dir.join("pred.json");
    simulate_timeline(&pred, &PAIR_SHAPE, &["--costs", &costs]);
    let meas = dir.join("meas.json");
    std::fs::write(&meas, fake_measurement(&pred, 2.0).to_string()).unwrap();

    let (png, svg) = (dir.join("pair.png"), dir.join("pair.svg"));
    for out in [&png, &svg] {
        run_ok(&[
            "gantt",
            "--timeline",
            pred.to_str().unwrap(),
            "--timeline",
            meas.to_str().unwrap(),
            "--compare",
            "descending",
            "-o",
            out.to_str().unwrap(),
            "--width",
            "1000",
            "--height",
            "900",
        ]);
    }
    assert_eq!(decode_png(&png).0, 1000);
    let text = svg_text(&svg, 1000, 900);
    let (p, m) = ("descending (predicted, pred.json): makespan", "descending (measured, meas.json): makespan");
    for needle in [p, m, "timelines pred.json (predicted), meas.json (measured)", "costs of pred.json", "time (µs)"] {
        assert!(text.contains(needle), "svg text lacks {needle:?}:\n{text}");
    }
    assert!(!text.contains("naive"), "--compare picks descending only:\n{text}");
    assert!(text.find(p) < text.find(m), "panels are stacked in the order of the files:\n{text}");
    // One axis: the measurement takes twice as long, so its makespan line lies about twice as far from the
    // axis start as the prediction's. With an axis per panel, both lines would sit at the right edge.
    let lines = makespan_lines(&std::fs::read_to_string(&svg).unwrap());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1] - lines[0] > 300.0, "makespan lines at {lines:?}");

    // Without --compare every schedule of every file is drawn: 2 files x 2 schedules.
    run_ok(&[
        "gantt",
        "--timeline",
        pred.to_str().unwrap(),
        "--timeline",
        meas.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
    ]);
    let all = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(makespan_lines(&all).len(), 4);
    assert!(all.contains("naive (measured, meas.json): makespan"));

    // One file still draws alone, its source in the subtitle and plain captions.
    run_ok(&[
        "gantt",
        "--timeline",
        meas.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--width",
        "800",
        "--height",
        "700",
    ]);
    let text = svg_text(&svg, 800, 700);
    assert!(text.contains("measured timeline") && text.contains("descending: makespan"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timelines_of_other_problems_or_units_are_refused() {
    let dir = scratch("pair-bad");
    let costs = costs_fixture();
    let pred = dir.join("pred.json");
    simulate_timeline(&pred, &PAIR_SHAPE, &["--costs", &costs]);
    let meas = dir.join("meas.json");
    let measured = fake_measurement(&pred, 1.1);
    std::fs::write(&meas, measured.to_string()).unwrap();
    let pair = |a: &Path, b: &Path, extra: &[&str], needle: &str| {
        let mut args = vec!["gantt", "--timeline", a.to_str().unwrap(), "--timeline", b.to_str().unwrap()];
        args.extend(extra);
        args.extend(["-o", "x.png"]);
        fails_with(&args, 2, needle);
    };

    // Another shape, as simulate writes it.
    let longer = dir.join("longer.json");
    let mut shape = PAIR_SHAPE;
    shape[3] = "1024";
    simulate_timeline(&longer, &shape, &["--costs", &costs]);
    pair(
        &longer,
        &meas,
        &[],
        "timelines longer.json and meas.json are not of one problem: seqlen_q is 1024 in longer.json but 512 in meas.json",
    );
    // Other tiles, SM count and mask, as a trace of another run would record them.
    for (field, value, needle) in [
        ("block_n", Value::from(64), "block_n is 128 in pred.json but 64 in other.json"),
        ("sms", Value::from(132), "sms is 8 in pred.json but 132 in other.json"),
        ("mask", serde_json::json!({"kind": "full"}), "mask is causal in pred.json but full in other.json"),
    ] {
        let mut v = measured.clone();
        match field {
            "sms" => v["machine"]["sms"] = value,
            "mask" => v["mask"] = value,
            _ => v["problem"][field] = value,
        }
        let other = dir.join("other.json");
        std::fs::write(&other, v.to_string()).unwrap();
        pair(&pred, &other, &[], needle);
    }

    // A prediction in model units beside a measurement in µs: the hint says how to predict in µs.
    let model = dir.join("model.json");
    simulate_timeline(&model, &PAIR_SHAPE, &[]);
    pair(
        &model,
        &meas,
        &[],
        "time_unit is tile-compute in model.json but us in meas.json; predict with `dashc simulate ... --costs FILE",
    );
    pair(&meas, &model, &[], "time_unit is us in meas.json but tile-compute in model.json");

    // --compare picks from every file; a name one file lacks is refused, naming that file.
    let mut v = measured.clone();
    v["schedules"].as_array_mut().unwrap().retain(|s| s["schedule"] == "descending");
    let one = dir.join("one.json");
    std::fs::write(&one, v.to_string()).unwrap();
    pair(&pred, &one, &["--compare", "naive"], "--compare: no schedule 'naive' in one.json (it has descending)");
    // Shape flags still do not go with timeline files.
    pair(&pred, &meas, &["--seqlen", "1024"], "cannot be used with");
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

#[test]
fn gantt_reads_a_gzipped_timeline_by_either_name() {
    // bench/results keeps traces gzipped while their raw files name the JSON: both names must load.
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("dashc-gz-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("timeline.json");
    let args =
        ["simulate", "--seqlen", "1024", "--sms", "8", "--schedule", "naive", "--timeline", json.to_str().unwrap()];
    let out = dashc(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let gz = dir.join("timeline.json.gz");
    let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    enc.write_all(&std::fs::read(&json).unwrap()).unwrap();
    enc.finish().unwrap();
    let png_plain = dir.join("plain.png");
    let out = dashc(&["gantt", "--timeline", json.to_str().unwrap(), "-o", png_plain.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_file(&json).unwrap();
    for (name, given) in [("by-json-name.png", &json), ("by-gz-name.png", &gz)] {
        let png = dir.join(name);
        let out = dashc(&["gantt", "--timeline", given.to_str().unwrap(), "-o", png.to_str().unwrap()]);
        assert!(out.status.success(), "{}: {}", given.display(), stderr(&out));
        assert_eq!(std::fs::read(&png).unwrap(), std::fs::read(&png_plain).unwrap(), "{}", given.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_draws_split_tails_by_name_or_with_the_flag() {
    // 4 x 16 heads of 64 x 32 tiles on 132 SMs leave a partial last pass, so shift has a split version.
    let dir = scratch("compare-split");
    let shape = ["--seqlen", "4096", "--batch", "4", "--mask", "full", "--height", "700"];
    let panels = |extra: &[&str]| {
        let svg = dir.join("split.svg");
        let mut args = vec!["gantt", "-o", svg.to_str().unwrap()];
        args.extend(shape);
        args.extend(extra);
        run_ok(&args);
        let text = svg_text(&svg, 1600, 700);
        ["shift: makespan", "shift+split: makespan"].map(|panel| text.contains(panel))
    };
    assert_eq!(panels(&["--compare", "shift,shift+split"]), [true, true]);
    assert_eq!(panels(&["--compare", "shift+split"]), [false, true]);
    assert_eq!(panels(&["--split-tail", "--compare", "shift"]), [true, true]);
    assert_eq!(panels(&["--compare", "shift"]), [true, false]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_segment_past_its_makespan_is_a_damaged_file() {
    let dir = scratch("past-makespan");
    let path = dir.join("t.json");
    simulate_timeline(&path, &["--seqlen", "512", "--heads", "1", "--mask", "full"], &["--schedule", "shift"]);
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    file["schedules"][0]["segments"][0]["end"] = 1e308.into();
    std::fs::write(&path, file.to_string()).unwrap();
    let out = dir.join("t.png");
    fails_with(
        &["gantt", "--timeline", path.to_str().unwrap(), "-o", out.to_str().unwrap()],
        2,
        "is past the schedule's makespan",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_all_is_refused_with_what_to_do() {
    let out = dashc(&["gantt", "-o", "g.png", "--ideal", "--tiles", "4", "--heads", "2", "--compare", "all"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("leave --compare out to draw every schedule"), "{}", stderr(&out));
}

#[test]
fn a_compared_split_that_makes_nothing_says_why() {
    let shape = ["--batch", "1", "--heads", "33", "--seqlen", "4096", "--mask", "full"];
    let out = dashc(&[&["gantt", "-o", "g.png", "--compare", "shift,shift+split"][..], &shape[..]].concat());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out)
            .contains("--compare shift+split: nothing to split: its 1056 units fill their last pass on 132 SMs"),
        "{}",
        stderr(&out)
    );
    fails_with(
        &["gantt", "-o", "g.png", "--schedule-file", "s.json", "--compare", "naive+split"],
        2,
        "a split tail is made of a built-in",
    );
    // Asked with the flag instead, the chart has the unsplit schedule alone and says why.
    let dir = scratch("split-nothing");
    let png = dir.join("g.png");
    let out = dashc(
        &[&["gantt", "-o", png.to_str().unwrap(), "--schedule", "shift", "--split-tail"][..], &shape[..]].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("shift+split: skipped, nothing to split: its 1056 units fill their last pass on 132 SMs"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
